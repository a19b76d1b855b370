package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvPackagesInstalled, set to 1, says that the jobsight-agent and
// jobsight packages were installed on this machine (make grafana-test with
// JOBSIGHT_INSTALL_PACKAGES=1, as CI runs it: scripts/install-packages.sh)
// and that the suites that can should run the agent and the SPANK plugin
// from them.
const EnvPackagesInstalled = "JOBSIGHT_PACKAGES_INSTALLED"

// Installed paths of the agent package (docs/packages.md).
const (
	PackagedAgent        = "/usr/sbin/jobsight-agent"
	PackagedSpankInstall = "/usr/sbin/jobsight-spank-install"
)

// PackagedAgentFor returns the installed agent and a SPANK plugin built
// for in by the package's own jobsight-spank-install, as a site admin runs
// it (against the release's headers, checked against its slurmd), into
// out/plugins. The package's version (dpkg's, without the Debian revision)
// is returned too: the agent stamps it into every document.
func PackagedAgentFor(ctx context.Context, out string, in SlurmInstall) (agent, plugin, version string, err error) {
	for _, p := range []string{PackagedAgent, PackagedSpankInstall} {
		if _, err := os.Stat(p); err != nil {
			return "", "", "", fmt.Errorf("%s=1 but %s is not installed: %w", EnvPackagesInstalled, p, err)
		}
	}
	q, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", "jobsight-agent").Output()
	if err != nil {
		return "", "", "", fmt.Errorf("dpkg-query jobsight-agent: %w", err)
	}
	version, _, _ = strings.Cut(strings.TrimSpace(string(q)), "-")
	prefix := in.Prefix
	if prefix == "" {
		prefix = "/usr"
	}
	plugins := filepath.Join(out, "plugins")
	cmd := exec.CommandContext(ctx, PackagedSpankInstall, prefix, plugins)
	// slurmd -V of the cluster's release is what the installer compares the
	// headers with, as on a node where that release is the one installed.
	cmd.Env = append(os.Environ(), in.PathEnv())
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", "", "", fmt.Errorf("%s %s %s: %w\n%s", PackagedSpankInstall, prefix, plugins, err, b)
	}
	return PackagedAgent, filepath.Join(plugins, "jobsight.so"), version, nil
}
