package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// EnvSlurm picks the Slurm release the test clusters and the local stack
// run: "26.05" (the default: the current release, the primary test
// cluster), "25.11" or "25.05", each built from ../shared/slurm by
// scripts/build-slurm.sh and cached; or "22.05", Debian 12's packages (out
// of SchedMD's support, kept as a second target while sites run it).
const EnvSlurm = "JOBSIGHT_SLURM"

// DefaultSlurmRelease is the release used when EnvSlurm is not set.
const DefaultSlurmRelease = "26.05"

// builtReleases are the releases built from source, by the version of
// their tarball in ../shared/slurm.
var builtReleases = map[string]string{"26.05": "26.05.3", "25.11": "25.11.7", "25.05": "25.05.8"}

// SlurmInstall is one installed Slurm: its binaries, headers and release.
type SlurmInstall struct {
	// Release is the release line: "26.05", "22.05", ...
	Release string
	// Version is the full version ("26.05.3"); empty for the system's.
	Version string
	// Prefix is the installation prefix of a built release; empty for the
	// system's Slurm (Debian's, found in PATH and /usr/include).
	Prefix string
}

// SlurmRelease is the release EnvSlurm names, else DefaultSlurmRelease.
func SlurmRelease() string {
	if r := os.Getenv(EnvSlurm); r != "" {
		return r
	}
	return DefaultSlurmRelease
}

var (
	installMu sync.Mutex
	installs  = map[string]SlurmInstall{}
)

// FindSlurm returns the installed Slurm of release ("" is SlurmRelease()).
// A built release is built the first time (scripts/build-slurm.sh, 5-20
// minutes on two cores; cached under $JOBSIGHT_CACHE) and found in its
// cache after that; "22.05" is the system's, from Debian's packages.
func FindSlurm(ctx context.Context, release string) (SlurmInstall, error) {
	if release == "" {
		release = SlurmRelease()
	}
	installMu.Lock()
	defer installMu.Unlock()
	if in, ok := installs[release]; ok {
		return in, nil
	}
	in := SlurmInstall{Release: release}
	if release == "22.05" {
		for _, bin := range []string{"slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel", "sinfo"} {
			if _, err := exec.LookPath(bin); err != nil {
				return in, fmt.Errorf("Slurm 22.05 is Debian's (slurm-wlm slurmctld slurmd slurm-client libslurm-dev): %s is not in PATH", bin)
			}
		}
	} else {
		version, ok := builtReleases[release]
		if !ok {
			return in, fmt.Errorf("%s=%q: not a release the tests run (26.05, 25.11, 25.05 or 22.05)", EnvSlurm, release)
		}
		prefix, err := RunBuildScript(ctx, "scripts/build-slurm.sh", version)
		if err != nil {
			return in, fmt.Errorf("Slurm %s: %w", version, err)
		}
		in.Version, in.Prefix = version, prefix
	}
	installs[release] = in
	return in, nil
}

// Bin is the path of one of Slurm's programs (sbatch, slurmd, ...): in
// the prefix's bin/ or sbin/, or the bare name for the system's Slurm.
func (in SlurmInstall) Bin(name string) string {
	if in.Prefix == "" {
		return name
	}
	for _, dir := range []string{"bin", "sbin"} {
		p := filepath.Join(in.Prefix, dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(in.Prefix, "bin", name)
}

// Include is the directory holding slurm/spank.h, for building the SPANK
// plugin against this release.
func (in SlurmInstall) Include() string {
	if in.Prefix == "" {
		return "/usr/include"
	}
	return filepath.Join(in.Prefix, "include")
}

// PathEnv is a PATH with this release's programs first, for commands (and
// wrapper scripts) that run Slurm's clients by name.
func (in SlurmInstall) PathEnv() string {
	path := os.Getenv("PATH")
	if in.Prefix == "" {
		return "PATH=" + path
	}
	return "PATH=" + filepath.Join(in.Prefix, "bin") + ":" + filepath.Join(in.Prefix, "sbin") + ":" + path
}

// String names the release: "Slurm 26.05.3 (built)" or "Slurm 22.05
// (system)".
func (in SlurmInstall) String() string {
	if in.Prefix == "" {
		return "Slurm " + in.Release + " (system)"
	}
	return "Slurm " + in.Version + " (" + in.Prefix + ")"
}
