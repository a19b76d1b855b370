// Command jobsight-packages builds the Debian and RPM packages a site
// installs (docs/packages.md), with nfpm's library — no dpkg-deb or
// rpmbuild needed:
//
//	jobsight-agent   compute and login nodes: the agent, its configuration
//	                 and directories, the SPANK plugin's source and
//	                 jobsight-spank-install, which builds it against the
//	                 node's own Slurm
//	jobsight         admin and login nodes: the site command, its
//	                 configuration, the cluster-state collector's unit,
//	                 user and spool
//
// Run from the repository root (`make packages`):
//
//	go run ./cmd/jobsight-packages [--out bin/packages] [--arch amd64[,arm64]]
//	    [--format deb,rpm] [--release | --version 1.2.3] [--build-version VERSION]
//	go run ./cmd/jobsight-packages --print-version [--release]
//
// It builds both binaries for each architecture as the Makefile does (cgo:
// the agent loads NVML and AMD SMI at run time, and both resolve users
// through the C library's NSS, as LDAP and SSSD sites need). arm64 needs a
// C cross compiler (aarch64-linux-gnu-gcc, or CC_arm64 naming one).
// --version is the package version; by default it is made from the
// VERSION file and git (packageVersion: VERSION at its release tag,
// VERSION+git<N>.<commit> between releases); --release takes VERSION
// as it is (make release). --build-version is what both programs report
// as their version (`jobsight-agent version`, `jobsight version`,
// agent_version in every document), by default the package version, so
// that a node's documents name the package installed there.
// --print-version prints the version and builds nothing (the Makefile's
// ldflags).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jobsight-packages", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bin/packages", "directory the packages are written to")
	arches := fs.String("arch", "amd64", "architectures, comma-separated: amd64, arm64")
	formats := fs.String("format", "deb,rpm", "package formats, comma-separated: deb, rpm")
	version := fs.String("version", "", "package version (default: VERSION, with +git<commits>.<commit> between releases)")
	release := fs.Bool("release", false, "a release: the package version is VERSION as it is")
	printVersion := fs.Bool("print-version", false, "print the version and build nothing")
	buildVersion := fs.String("build-version", "", "the agent's own version string (default: the package version)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jobsight-packages: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *release && *version != "" {
		fmt.Fprintln(stderr, "jobsight-packages: --release and --version exclude each other (a release's version is VERSION's)")
		return 2
	}
	if *printVersion {
		v, err := resolveVersion(".", *version, *release)
		if err != nil {
			fmt.Fprintln(stderr, "jobsight-packages:", err)
			return 1
		}
		fmt.Fprintln(stdout, v)
		return 0
	}
	if err := build(options{
		root: ".", out: *out, arches: split(*arches), formats: split(*formats),
		version: *version, release: *release, buildVersion: *buildVersion,
	}, stdout); err != nil {
		fmt.Fprintln(stderr, "jobsight-packages:", err)
		return 1
	}
	return 0
}

type options struct {
	root         string
	out          string
	arches       []string
	formats      []string
	version      string
	release      bool
	buildVersion string
}

// buildVersionChars keeps the version one word of -ldflags.
var buildVersionChars = regexp.MustCompile(`^[0-9A-Za-z.+~_-]+$`)

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// build checks everything it can before building anything, then builds
// the binaries and packages of each architecture.
func build(o options, stdout io.Writer) error {
	if b, err := os.ReadFile(filepath.Join(o.root, "go.mod")); err != nil || !bytes.Contains(b, []byte("module github.com/jobsight/jobsight\n")) {
		return fmt.Errorf("%s is not the Jobsight repository: run it from the repository root", o.root)
	}
	if len(o.arches) == 0 || len(o.formats) == 0 {
		return errors.New("--arch and --format need at least one value each")
	}
	for _, f := range o.formats {
		if _, err := packager(f); err != nil {
			return err
		}
	}
	cc := map[string]string{}
	for _, a := range o.arches {
		c, err := cCompiler(a)
		if err != nil {
			return err
		}
		cc[a] = c
	}
	var err error
	if o.version, err = resolveVersion(o.root, o.version, o.release); err != nil {
		return err
	}
	if o.buildVersion == "" {
		o.buildVersion = o.version
	}
	if !buildVersionChars.MatchString(o.buildVersion) {
		return fmt.Errorf("--build-version %q: letters, digits and . + ~ _ - only", o.buildVersion)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "jobsight-packages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, arch := range o.arches {
		in := input{root: o.root, version: o.version, arch: arch,
			agentBin: filepath.Join(work, arch, "jobsight-agent"),
			siteBin:  filepath.Join(work, arch, "jobsight")}
		if err := goBuild(o.root, arch, cc[arch], in.agentBin, "./cmd/jobsight-agent",
			"-s -w -X github.com/jobsight/jobsight/agent/jobagent.Version="+o.buildVersion); err != nil {
			return err
		}
		if err := goBuild(o.root, arch, cc[arch], in.siteBin, "./cmd/jobsight", "-s -w -X main.version="+o.buildVersion); err != nil {
			return err
		}
		for _, name := range packageNames {
			for _, format := range o.formats {
				info, err := packageInfo(name, in, format)
				if err != nil {
					return err
				}
				path, err := writePackage(info, format, o.out)
				if err != nil {
					return err
				}
				st, err := os.Stat(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s  %.1f MiB\n", path, float64(st.Size())/(1<<20))
			}
		}
	}
	return nil
}

// cCompiler is the C compiler cgo uses for arch: the default one for the
// machine's own architecture, a cross compiler for another (CC_<arch>, or
// the usual Debian cross compiler's name). The binaries are not built
// without cgo: they would lose GPU support and resolve only the users
// /etc/passwd holds.
func cCompiler(arch string) (string, error) {
	cross := map[string]string{"amd64": "x86_64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
	if _, ok := cross[arch]; !ok {
		return "", fmt.Errorf("--arch %q: amd64 or arm64", arch)
	}
	if arch == runtime.GOARCH {
		return "", nil // cgo's default
	}
	if cc := os.Getenv("CC_" + arch); cc != "" {
		return cc, nil
	}
	if _, err := exec.LookPath(cross[arch]); err != nil {
		return "", fmt.Errorf("--arch %s: needs a C cross compiler for cgo (%s, Debian package gcc-%s; or CC_%s naming one)",
			arch, cross[arch], strings.TrimSuffix(cross[arch], "-gcc"), arch)
	}
	return cross[arch], nil
}

func goBuild(root, arch, cc, out, pkg, ldflags string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	// #nosec G702 -- a build tool: the developer's own go ($GO, as make passes it) on this repository's packages
	cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=1")
	if cc != "" {
		cmd.Env = append(cmd.Env, "CC="+cc)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %v\n%s", pkg, arch, err, stderr.String())
	}
	return nil
}

// resolveVersion is the package version: the one given (checked), VERSION
// itself for a release, or VERSION with the checkout's git state.
func resolveVersion(root, given string, release bool) (string, error) {
	if given != "" {
		return given, checkVersion(given)
	}
	base, err := baseVersion(root)
	if err != nil || release {
		return base, err
	}
	return gitVersion(root, base)
}

// gitVersion is the package version of the checkout in root, whose
// VERSION holds base; outside a git checkout (a source archive) base.
func gitVersion(root, base string) (string, error) {
	if _, err := git(root, "rev-parse", "--git-dir"); err != nil {
		return base, nil
	}
	var g gitState
	tags, err := git(root, "tag", "--points-at", "HEAD")
	if err != nil {
		return "", err
	}
	g.tagsAtHead = strings.Fields(tags)
	count, err := git(root, "rev-list", "--count", "HEAD")
	if err != nil {
		return "", err
	}
	if g.commits, err = strconv.Atoi(count); err != nil {
		return "", fmt.Errorf("git rev-list --count HEAD: %q", count)
	}
	if g.commit, err = git(root, "rev-parse", "--short", "HEAD"); err != nil {
		return "", err
	}
	status, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return "", err
	}
	g.dirty = status != ""
	return packageVersion(base, g)
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
