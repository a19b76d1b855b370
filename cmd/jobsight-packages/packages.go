package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// The maintainer scripts; each is written for both dpkg's arguments and
// rpm's (docs/packages.md).
var (
	//go:embed scripts/agent-postinstall.sh
	agentPostinstall string
	//go:embed scripts/site-preinstall.sh
	sitePreinstall string
	//go:embed scripts/site-postinstall.sh
	sitePostinstall string
	//go:embed scripts/site-preremove.sh
	sitePreremove string
	//go:embed scripts/site-postremove.sh
	sitePostremove string
)

// input is what one architecture's packages are made of.
type input struct {
	root     string // the repository: examples/, agent/spank/, LICENSE
	version  string // the package version (packageVersion)
	arch     string // Go's name: amd64, arm64
	agentBin string // the built jobsight-agent
	siteBin  string // the built jobsight
}

const (
	maintainer = "Jobsight <jobsight@example.org>"
	homepage   = "https://github.com/jobsight/jobsight"
	license    = "Apache-2.0"
)

// glibcDepends is what the cgo-built binaries need of the C library: they
// link symbols of glibc 2.34 (Debian 12, Ubuntu 22.04, RHEL 9 and later).
// Declared, so that an older distribution refuses the package instead of
// running a binary that cannot start.
func glibcDepends(format string) []string {
	if format == "rpm" {
		return []string{"glibc >= 2.34"}
	}
	return []string{"libc6 (>= 2.34)"}
}

// packageNames are the two packages, in the order they are built.
var packageNames = []string{"jobsight-agent", "jobsight"}

// packageInfo is the nfpm description of the named package in format
// (deb or rpm).
func packageInfo(name string, in input, format string) (*nfpm.Info, error) {
	switch name {
	case "jobsight-agent":
		return agentPackage(in, format), nil
	case "jobsight":
		return sitePackage(in, format), nil
	}
	return nil, fmt.Errorf("no package %q", name)
}

func base(name string, in input, format, summary, description string) *nfpm.Info {
	info := &nfpm.Info{
		Name:          name,
		Arch:          in.arch,
		Platform:      "linux",
		Version:       in.version,
		VersionSchema: "none", // packageVersion made it valid for both
		Release:       "1",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    maintainer,
		Description:   summary + "\n" + description,
		Vendor:        "Jobsight",
		Homepage:      homepage,
		License:       license,
	}
	info.Depends = glibcDepends(format)
	info.RPM.Summary = summary
	info.RPM.Group = "Applications/System"
	return info
}

// agentPackage: the node agent, its configuration, its private
// directories and the SPANK plugin's source with the command that builds
// it against the node's own Slurm.
func agentPackage(in input, format string) *nfpm.Info {
	info := base("jobsight-agent", in, format,
		"Jobsight node agent: per-job CPU, memory, I/O and GPU usage for Slurm",
		` The agent measures each Slurm job on its node (cgroups, /proc, GPUs through
 NVML or AMD SMI loaded at run time) and writes job documents to
 Elasticsearch and gauges to a Prometheus remote-write receiver. The SPANK
 plugin that starts it is built on the node against its own Slurm:
 jobsight-spank-install.`)
	// The plugin is built on the site (jobsight-spank-install), not by the
	// package: a compiler is wanted, not required.
	info.Recommends = []string{"gcc", "make", "logrotate"}
	src := func(p string) string { return filepath.Join(in.root, p) }
	info.Contents = files.Contents{
		file(in.agentBin, "/usr/sbin/jobsight-agent", 0o755),
		file(src("agent/spank/jobsight-spank-install"), "/usr/sbin/jobsight-spank-install", 0o755),
		file(src("agent/spank/jobsight.c"), "/usr/share/jobsight/spank/jobsight.c", 0o644),
		file(src("agent/spank/Makefile"), "/usr/share/jobsight/spank/Makefile", 0o644),
		// Rebuilds the plugin before slurmd starts when a Slurm upgrade
		// left it built for the old release (jobsight-spank-install
		// --ensure).
		file(src("agent/spank/slurmd-jobsight-spank.conf"), "/usr/lib/systemd/system/slurmd.service.d/jobsight-spank.conf", 0o644),
		file(src("LICENSE"), "/usr/share/doc/jobsight-agent/copyright", 0o644),
		// Directories of the package's own, listed so that an rpm removal
		// takes them away too (dpkg does so anyway).
		dir("/usr/share/jobsight", 0o755, "root"),
		dir("/usr/share/jobsight/spank", 0o755, "root"),
		dir("/usr/share/doc/jobsight-agent", 0o755, "root"),
		dir("/etc/jobsight", 0o755, "root"),
		config(src("examples/agent.yaml"), "/etc/jobsight/agent.yaml", 0o644),
		config(src("examples/logrotate.d/jobsight"), "/etc/logrotate.d/jobsight", 0o644),
		// Private: the agent makes them 0700 in any case (state, the
		// spool of what waits for a store, the log).
		dir("/var/lib/jobsight", 0o700, "root"),
		dir("/var/spool/jobsight", 0o700, "root"),
		dir("/var/log/jobsight", 0o700, "root"),
	}
	info.Scripts.PostInstall = "agent-postinstall.sh"
	return info
}

// sitePackage: the site command (reports, advice, mail, history, export,
// the cluster-state collector), its configuration, the collector's unit
// (not enabled), the login nodes' cli_filter.lua, user and spool.
func sitePackage(in input, format string) *nfpm.Info {
	info := base("jobsight", in, format,
		"Jobsight site command: job reports, digests, history, cluster-state collector",
		` The jobsight command reads the job documents the agents write: per-job
 efficiency reports, mailed digests, per-user history and CSV export. Its
 cluster-state subcommand (one host per cluster; a systemd unit, not
 enabled) adds node states, partition contention and closes jobs lost with
 their node.`)
	src := func(p string) string { return filepath.Join(in.root, p) }
	info.Contents = files.Contents{
		file(in.siteBin, "/usr/bin/jobsight", 0o755),
		file(src("LICENSE"), "/usr/share/doc/jobsight/copyright", 0o644),
		dir("/usr/share/doc/jobsight", 0o755, "root"),
		dir("/etc/jobsight", 0o755, "root"),
		config(src("examples/site.yaml"), "/etc/jobsight/site.yaml", 0o644),
		config(src("examples/cluster-state.yaml"), "/etc/jobsight/cluster-state.yaml", 0o644),
		config(src("examples/constants.yaml"), "/etc/jobsight/constants.yaml", 0o644),
		file(src("examples/systemd/jobsight-cluster-state.service"), "/usr/lib/systemd/system/jobsight-cluster-state.service", 0o644),
		// The login nodes' cli_filter (docs/advise.md): linked into
		// Slurm's configuration directory by the admin, never by the
		// package (a site may have a cli_filter.lua of its own).
		dir("/usr/share/jobsight", 0o755, "root"),
		dir("/usr/share/jobsight/slurm", 0o755, "root"),
		file(src("examples/slurm/cli_filter.lua"), "/usr/share/jobsight/slurm/cli_filter.lua", 0o644),
		// The preinstall script has made the user by the time this is
		// unpacked; the postinstall script sets owner and mode again.
		dir("/var/spool/jobsight-cluster-state", 0o700, "jobsight"),
	}
	info.Scripts.PreInstall = "site-preinstall.sh"
	info.Scripts.PostInstall = "site-postinstall.sh"
	info.Scripts.PreRemove = "site-preremove.sh"
	info.Scripts.PostRemove = "site-postremove.sh"
	return info
}

func file(src, dst string, mode os.FileMode) *files.Content {
	return &files.Content{Source: src, Destination: dst, Type: files.TypeFile,
		FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode}}
}

// config is a configuration file the admin edits: an upgrade never
// replaces an edited one (deb conffile, rpm %config(noreplace)), and a
// removal leaves it.
func config(src, dst string, mode os.FileMode) *files.Content {
	return &files.Content{Source: src, Destination: dst, Type: files.TypeConfigNoReplace,
		FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode}}
}

func dir(dst string, mode os.FileMode, owner string) *files.Content {
	return &files.Content{Destination: dst, Type: files.TypeDir,
		FileInfo: &files.ContentFileInfo{Owner: owner, Group: owner, Mode: mode}}
}

// packager is nfpm's packager of format.
func packager(format string) (nfpm.Packager, error) {
	switch format {
	case "deb":
		return deb.Default, nil
	case "rpm":
		return rpm.DefaultRPM, nil
	}
	return nil, fmt.Errorf("format %q: deb or rpm", format)
}

// writePackage writes the package info describes in format into dir,
// under the format's conventional file name, and returns its path. The
// maintainer scripts are written to a scratch directory first: nfpm reads
// them from files.
func writePackage(info *nfpm.Info, format, dir string) (string, error) {
	p, err := packager(format)
	if err != nil {
		return "", err
	}
	scratch, err := os.MkdirTemp("", "jobsight-packages-scripts-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	for _, s := range []*string{&info.Scripts.PreInstall, &info.Scripts.PostInstall, &info.Scripts.PreRemove, &info.Scripts.PostRemove} {
		if *s == "" {
			continue
		}
		body, ok := scriptBodies[*s]
		if !ok {
			return "", fmt.Errorf("%s: no maintainer script %q", info.Name, *s)
		}
		path := filepath.Join(scratch, *s)
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			return "", err
		}
		*s = path
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.Validate(info); err != nil {
		return "", fmt.Errorf("%s: %w", info.Name, err)
	}
	out := filepath.Join(dir, p.ConventionalFileName(info))
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(out)
		return "", fmt.Errorf("%s (%s): %w", info.Name, format, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(out)
		return "", err
	}
	return out, nil
}

var scriptBodies = map[string]string{
	"agent-postinstall.sh": agentPostinstall,
	"site-preinstall.sh":   sitePreinstall,
	"site-postinstall.sh":  sitePostinstall,
	"site-preremove.sh":    sitePreremove,
	"site-postremove.sh":   sitePostremove,
}
