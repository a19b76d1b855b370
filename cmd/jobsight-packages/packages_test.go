package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jobsight/jobsight/test/stack"
)

func TestPackageVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		g    gitState
		want string
	}{
		{"at its release tag", gitState{tagsAtHead: []string{"v1.2.3"}, commits: 400, commit: "abc1234"}, "1.2.3"},
		{"tagged, other tags beside", gitState{tagsAtHead: []string{"issue34", "v1.2.3"}, commits: 400, commit: "abc1234"}, "1.2.3"},
		{"between releases", gitState{commits: 412, commit: "82096ee"}, "1.2.3+git412.82096ee"},
		{"between releases, a marker tag", gitState{tagsAtHead: []string{"issue34-done"}, commits: 412, commit: "82096ee"}, "1.2.3+git412.82096ee"},
		{"uncommitted changes", gitState{commits: 412, commit: "82096ee", dirty: true}, "1.2.3+git412.82096ee.dirty"},
		{"at the tag, uncommitted changes", gitState{tagsAtHead: []string{"v1.2.3"}, commits: 400, commit: "abc1234", dirty: true}, "1.2.3+git400.abc1234.dirty"},
	} {
		got, err := packageVersion("1.2.3", c.g)
		if err != nil || got != c.want {
			t.Errorf("%s: packageVersion(1.2.3, %+v) = %q, %v; want %q", c.name, c.g, got, err, c.want)
		}
	}
	// A release tag that VERSION does not name: VERSION was not set.
	if got, err := packageVersion("1.2.3", gitState{tagsAtHead: []string{"v1.3.0"}, commits: 5, commit: "abc1234"}); err == nil ||
		!strings.Contains(err.Error(), "tagged v1.3.0 but VERSION holds 1.2.3") {
		t.Errorf("HEAD tagged v1.3.0 with VERSION 1.2.3: %q, %v; want an error naming both", got, err)
	}
	if _, err := packageVersion("1.2.3", gitState{commit: "abc1234"}); err == nil {
		t.Error("a commit without the commit count was accepted")
	}
	if err := checkVersion("1.2-3"); err == nil {
		t.Error("checkVersion accepted a hyphen (dpkg's revision separator)")
	}
	// VERSION itself: one release number, a clear error otherwise.
	for content, want := range map[string]string{
		"0.1.0\n": "", "  2.10.3  \n": "", "v0.1.0\n": `holds "v0.1.0"`, "0.1\n": `holds "0.1"`,
		"0.1.0-rc1": `holds "0.1.0-rc1"`, "": `holds ""`, "0.1.0\n0.2.0\n": "MAJOR.MINOR.PATCH",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := baseVersion(dir)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("VERSION %q: %v; want an error containing %q", content, err, want)
		}
	}
	if _, err := baseVersion(t.TempDir()); err == nil || !strings.Contains(err.Error(), "version file") {
		t.Errorf("no VERSION file: %v", err)
	}
	// The checkout's own version: VERSION's, as the plugin says it.
	base, err := baseVersion("../..")
	if err != nil {
		t.Fatal(err)
	}
	v, err := resolveVersion("../..", "", false)
	if err != nil || (v != base && !strings.HasPrefix(v, base+"+git")) {
		t.Errorf("this checkout's version: %q, %v; want %s or %s+git<N>.<commit>", v, err, base, base)
	}
	if v, err := resolveVersion("../..", "", true); err != nil || v != base {
		t.Errorf("--release: %q, %v; want VERSION's %s", v, err, base)
	}
}

// The packages are built once, for the machine's architecture, into a
// directory every test below reads.
var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
	buildLog  string
)

const testVersion = "1.2.3~test"

func packages(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "jobsight-packages-test-")
		if buildErr != nil {
			return
		}
		var log bytes.Buffer
		buildErr = build(options{root: "../..", out: builtDir, arches: []string{runtime.GOARCH},
			formats: []string{"deb", "rpm"}, version: testVersion}, &log)
		buildLog = log.String()
	})
	if buildErr != nil {
		t.Fatalf("building the packages: %v", buildErr)
	}
	return builtDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

func debArch() string { return runtime.GOARCH } // amd64 and arm64 are Debian's names too

func rpmArch() string {
	return map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// entries are a package's paths with their mode and owner as `ls -l`
// writes them: "drwx------ jobsight/jobsight".
type entries map[string]string

// want is what every package must hold; a path not listed here is
// allowed only if it is a directory above a listed one.
var want = map[string]entries{
	"jobsight-agent": {
		"/usr/sbin/jobsight-agent":                                     "-rwxr-xr-x root/root",
		"/usr/sbin/jobsight-spank-install":                             "-rwxr-xr-x root/root",
		"/usr/share/jobsight/spank/jobsight.c":                         "-rw-r--r-- root/root",
		"/usr/share/jobsight/spank/Makefile":                           "-rw-r--r-- root/root",
		"/usr/lib/systemd/system/slurmd.service.d/jobsight-spank.conf": "-rw-r--r-- root/root",
		"/usr/share/doc/jobsight-agent/copyright":                      "-rw-r--r-- root/root",
		"/etc/jobsight":             "drwxr-xr-x root/root",
		"/etc/jobsight/agent.yaml":  "-rw-r--r-- root/root",
		"/etc/logrotate.d/jobsight": "-rw-r--r-- root/root",
		"/var/lib/jobsight":         "drwx------ root/root",
		"/var/spool/jobsight":       "drwx------ root/root",
		"/var/log/jobsight":         "drwx------ root/root",
	},
	"jobsight": {
		"/usr/bin/jobsight":                                      "-rwxr-xr-x root/root",
		"/usr/share/doc/jobsight/copyright":                      "-rw-r--r-- root/root",
		"/etc/jobsight":                                          "drwxr-xr-x root/root",
		"/etc/jobsight/site.yaml":                                "-rw-r--r-- root/root",
		"/etc/jobsight/cluster-state.yaml":                       "-rw-r--r-- root/root",
		"/etc/jobsight/constants.yaml":                           "-rw-r--r-- root/root",
		"/usr/lib/systemd/system/jobsight-cluster-state.service": "-rw-r--r-- root/root",
		"/usr/share/jobsight":                                    "drwxr-xr-x root/root",
		"/usr/share/jobsight/slurm":                              "drwxr-xr-x root/root",
		"/usr/share/jobsight/slurm/cli_filter.lua":               "-rw-r--r-- root/root",
		"/var/spool/jobsight-cluster-state":                      "drwx------ jobsight/jobsight",
	},
}

// conffiles are the files an upgrade never overwrites once edited and a
// removal leaves.
var conffiles = map[string][]string{
	"jobsight-agent": {"/etc/jobsight/agent.yaml", "/etc/logrotate.d/jobsight"},
	"jobsight":       {"/etc/jobsight/cluster-state.yaml", "/etc/jobsight/constants.yaml", "/etc/jobsight/site.yaml"},
}

// scripts are each package's maintainer scripts, by deb name.
var scripts = map[string]map[string]string{
	"jobsight-agent": {"postinst": agentPostinstall},
	"jobsight":       {"preinst": sitePreinstall, "postinst": sitePostinstall, "prerm": sitePreremove, "postrm": sitePostremove},
}

func checkEntries(t *testing.T, pkg string, got entries) {
	t.Helper()
	for path, w := range want[pkg] {
		if got[path] != w {
			t.Errorf("%s: %s is %q, want %q", pkg, path, got[path], w)
		}
	}
	for path, g := range got {
		if _, ok := want[pkg][path]; ok {
			continue
		}
		above := false
		for w := range want[pkg] {
			above = above || strings.HasPrefix(w, path+"/")
		}
		if !above || !strings.HasPrefix(g, "d") {
			t.Errorf("%s: unexpected %s (%s)", pkg, path, g)
		} else if g != "drwxr-xr-x root/root" {
			t.Errorf("%s: directory %s is %q, want drwxr-xr-x root/root", pkg, path, g)
		}
	}
}

func TestDebs(t *testing.T) {
	stack.Require(t, "dpkg-deb")
	dir := packages(t)
	for _, pkg := range packageNames {
		t.Run(pkg, func(t *testing.T) {
			deb := filepath.Join(dir, pkg+"_"+testVersion+"-1_"+debArch()+".deb")
			got := entries{}
			// drwx------ jobsight/jobsight 0 2026-11-26 08:10 ./var/spool/jobsight-cluster-state/
			for _, line := range strings.Split(strings.TrimSpace(output(t, "dpkg-deb", "--contents", deb)), "\n") {
				f := strings.Fields(line)
				if len(f) != 6 {
					t.Fatalf("dpkg-deb --contents: unexpected line %q", line)
				}
				path := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
				if path != "" {
					got[path] = f[0] + " " + f[1]
				}
			}
			checkEntries(t, pkg, got)

			control := t.TempDir()
			output(t, "dpkg-deb", "--control", deb, control)
			cf, _ := os.ReadFile(filepath.Join(control, "conffiles"))
			if g := strings.Fields(string(cf)); !slices.Equal(sorted(g), conffiles[pkg]) {
				t.Errorf("%s: conffiles %q, want %q", pkg, g, conffiles[pkg])
			}
			for _, s := range []string{"preinst", "postinst", "prerm", "postrm"} {
				b, err := os.ReadFile(filepath.Join(control, s))
				w, ok := scripts[pkg][s]
				switch {
				case !ok && err == nil:
					t.Errorf("%s: unexpected %s", pkg, s)
				case ok && string(b) != w:
					t.Errorf("%s: %s is not the script in scripts/ (%v)", pkg, s, err)
				}
			}
			fields := output(t, "dpkg-deb", "--field", deb, "Package", "Version", "Architecture", "Depends", "Recommends")
			for _, w := range []string{"Package: " + pkg + "\n", "Version: " + testVersion + "-1\n",
				"Architecture: " + debArch() + "\n", "Depends: libc6 (>= 2.34)\n"} {
				if !strings.Contains(fields, w) {
					t.Errorf("%s: control has no %q:\n%s", pkg, w, fields)
				}
			}
			// A compiler is recommended for the SPANK plugin, never required.
			if pkg == "jobsight-agent" && !strings.Contains(fields, "Recommends: gcc, make") {
				t.Errorf("%s: gcc and make not recommended:\n%s", pkg, fields)
			}
		})
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

func TestRPMs(t *testing.T) {
	stack.Require(t, "rpm") // Debian's rpm package: rpm reads packages without an rpm database
	dir := packages(t)
	for _, pkg := range packageNames {
		t.Run(pkg, func(t *testing.T) {
			file := filepath.Join(dir, pkg+"-"+testVersion+"-1."+rpmArch()+".rpm")
			got := entries{}
			var config []string
			list := output(t, "rpm", "-qp", "--qf", `[%{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]`, file)
			for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
				f := strings.Fields(line)
				if len(f) == 3 { // no flags
					f = []string{f[0], f[1], "", f[2]}
				}
				if len(f) != 4 {
					t.Fatalf("rpm -qp: unexpected line %q", line)
				}
				got[f[3]] = f[0] + " " + f[1]
				if strings.Contains(f[2], "c") {
					if f[2] != "cn" {
						t.Errorf("%s: %s is %%config without noreplace (%s)", pkg, f[3], f[2])
					}
					config = append(config, f[3])
				}
			}
			// rpm lists only what the package owns: no parent directories of
			// the system's.
			checkEntries(t, pkg, got)
			if !slices.Equal(sorted(config), conffiles[pkg]) {
				t.Errorf("%s: %%config files %q, want %q", pkg, config, conffiles[pkg])
			}
			rpmScripts := map[string]string{"preinst": "PREIN", "postinst": "POSTIN", "prerm": "PREUN", "postrm": "POSTUN"}
			for deb, tag := range rpmScripts {
				g := output(t, "rpm", "-qp", "--qf", "%{"+tag+"}", file)
				w, ok := scripts[pkg][deb]
				if !ok {
					w = "(none)"
				}
				if strings.TrimSpace(g) != strings.TrimSpace(w) {
					t.Errorf("%s: %s is %q, want the script of scripts/", pkg, tag, g)
				}
			}
			req := output(t, "rpm", "-qpR", file)
			if !strings.Contains(req, "glibc >= 2.34") || strings.Contains(req, "gcc") {
				t.Errorf("%s: requires\n%s\nwant glibc >= 2.34 and no compiler", pkg, req)
			}
			if v := output(t, "rpm", "-qp", "--qf", "%{VERSION}-%{RELEASE}.%{ARCH}", file); v != testVersion+"-1."+rpmArch() {
				t.Errorf("%s: version %s", pkg, v)
			}
		})
	}
}

// TestInstalledDebs unpacks both .debs into a throwaway root as dpkg
// would (dpkg -x), and runs what an admin runs after installing: the
// programs' configuration checks on the installed configuration, and the
// SPANK plugin's one build command against this machine's Slurm headers.
func TestInstalledDebs(t *testing.T) {
	stack.Require(t, "dpkg-deb", "cc", "make")
	dir := packages(t)
	root := t.TempDir()
	for _, pkg := range packageNames {
		output(t, "dpkg-deb", "-x", filepath.Join(dir, pkg+"_"+testVersion+"-1_"+debArch()+".deb"), root)
	}
	r := func(p string) string { return filepath.Join(root, p) }

	if v := output(t, r("/usr/sbin/jobsight-agent"), "version"); v != "jobsight-agent "+testVersion+"\n" {
		t.Errorf("jobsight-agent version: %q, want the package version", v)
	}
	if v := output(t, r("/usr/bin/jobsight"), "version"); v != "jobsight "+testVersion+"\n" {
		t.Errorf("jobsight version: %q, want the package version", v)
	}
	output(t, r("/usr/sbin/jobsight-agent"), "check-config", "--config", r("/etc/jobsight/agent.yaml"))
	output(t, r("/usr/bin/jobsight"), "check-config", "--config", r("/etc/jobsight/site.yaml"))
	// The collector's configuration names /etc/jobsight/constants.yaml:
	// here, the one unpacked beside it.
	cs, err := os.ReadFile(r("/etc/jobsight/cluster-state.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cs, []byte("/etc/jobsight/constants.yaml")) {
		t.Fatal("cluster-state.yaml no longer names /etc/jobsight/constants.yaml; update this test")
	}
	csPath := filepath.Join(t.TempDir(), "cluster-state.yaml")
	if err := os.WriteFile(csPath, bytes.ReplaceAll(cs, []byte("/etc/jobsight/constants.yaml"), []byte(r("/etc/jobsight/constants.yaml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	output(t, r("/usr/bin/jobsight"), "cluster-state", "--config", csPath, "--check")
	unit, _ := os.ReadFile(r("/usr/lib/systemd/system/jobsight-cluster-state.service"))
	for _, w := range []string{"ExecStart=/usr/bin/jobsight cluster-state --config /etc/jobsight/cluster-state.yaml\n", "User=jobsight\n"} {
		if !bytes.Contains(unit, []byte(w)) {
			t.Errorf("the collector's unit has no %q", w)
		}
	}

	t.Run("spank", func(t *testing.T) {
		// Debian's libslurm-dev: the headers jobsight-spank-install builds
		// against with SLURM_PREFIX=/usr.
		hdr, err := os.ReadFile("/usr/include/slurm/slurm_version.h")
		if err != nil {
			stack.Unavailable(t, "needs Slurm's headers under /usr (Debian libslurm-dev): %v", err)
		}
		m := regexp.MustCompile(`SLURM_VERSION_NUMBER 0x([0-9a-fA-F]{2})([0-9a-fA-F]{2})`).FindSubmatch(hdr)
		if m == nil {
			t.Fatal("slurm_version.h has no SLURM_VERSION_NUMBER")
		}
		major, _ := strconv.ParseUint(string(m[1]), 16, 8)
		minor, _ := strconv.ParseUint(string(m[2]), 16, 8)
		release := fmt.Sprintf("%d.%02d", major, minor)
		install := r("/usr/sbin/jobsight-spank-install")
		// A slurmd of the headers' release, and one of another: the
		// script compares with what will load the plugin.
		fake := func(v string) string {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "slurmd"), []byte("#!/bin/sh\necho slurm "+v+".1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return d + ":" + os.Getenv("PATH")
		}
		plugins := filepath.Join(t.TempDir(), "plugins")
		cmd := exec.Command(install, "/usr", plugins)
		cmd.Env = append(os.Environ(), "PATH="+fake(release))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jobsight-spank-install /usr %s: %v\n%s", plugins, err, out)
		}
		if !strings.Contains(string(out), "installed "+plugins+"/jobsight.so for Slurm "+release) ||
			!strings.Contains(string(out), "optional "+plugins+"/jobsight.so agent=/usr/sbin/jobsight-agent") {
			t.Errorf("jobsight-spank-install said:\n%s", out)
		}
		if st, err := os.Stat(filepath.Join(plugins, "jobsight.so")); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("jobsight.so: %v %v", st, err)
		}
		elf := output(t, "sh", "-c", "od -An -c -N4 "+filepath.Join(plugins, "jobsight.so"))
		if !strings.Contains(elf, "E   L   F") {
			t.Errorf("jobsight.so is not an ELF object: %q", elf)
		}

		cmd = exec.Command(install, "/usr", filepath.Join(t.TempDir(), "other"))
		cmd.Env = append(os.Environ(), "PATH="+fake("99.11"))
		out, err = cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "this node runs Slurm 99.11") {
			t.Errorf("a plugin for another release than slurmd's: %v\n%s", err, out)
		}
		cmd = exec.Command(install, "/nonexistent", plugins)
		out, err = cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "/nonexistent/include/slurm/spank.h not found") {
			t.Errorf("a prefix without Slurm's headers: %v\n%s", err, out)
		}
	})
}

// shims writes programs named names into a new directory, each appending
// its name and arguments to the returned log; getent answers from the
// users/groups that exist (exists).
func shims(t *testing.T, exists bool, names ...string) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	for _, n := range names {
		body := "#!/bin/sh\necho \"" + n + " $*\" >> " + log + "\n"
		if n == "getent" {
			body = "#!/bin/sh\nexit 2\n"
			if exists {
				body = "#!/bin/sh\necho \"$2:x:999:\"\n"
			}
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

func runScript(t *testing.T, script, path string, args ...string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(f, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{f}, args...)...)
	cmd.Env = []string{"PATH=" + path}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script %v: %v\n%s", args, err, out)
	}
}

func calls(log string) string {
	b, _ := os.ReadFile(log)
	return string(b)
}

// TestMaintainerScripts runs the site package's scripts with the system
// commands they call replaced by recorders: they make the user once, with
// whichever tool the distribution has, and are idempotent; a removal stops
// the collector, an upgrade does not. Nothing on this machine changes.
func TestMaintainerScripts(t *testing.T) {
	t.Parallel()
	path, log := shims(t, false, "getent", "groupadd", "useradd", "addgroup", "adduser")
	runScript(t, sitePreinstall, path, "install")
	if g := calls(log); !strings.Contains(g, "groupadd --system jobsight\n") ||
		!regexp.MustCompile(`useradd --system --gid jobsight .*--shell /usr/sbin/nologin .*jobsight\n`).MatchString(g) || strings.Contains(g, "adduser") {
		t.Errorf("preinstall on a new machine (rpm-style tools) ran:\n%s", g)
	}
	path, log = shims(t, false, "getent", "addgroup", "adduser")
	runScript(t, sitePreinstall, path, "1")
	if g := calls(log); !strings.Contains(g, "addgroup --system jobsight\n") || !strings.Contains(g, "adduser --system --ingroup jobsight") {
		t.Errorf("preinstall with adduser only ran:\n%s", g)
	}
	path, log = shims(t, true, "getent", "groupadd", "useradd", "addgroup", "adduser")
	runScript(t, sitePreinstall, path, "upgrade", "1.2.2-1")
	if g := calls(log); g != "" {
		t.Errorf("preinstall with the user already there ran:\n%s", g)
	}

	_, systemd := os.Stat("/run/systemd/system")
	path, log = shims(t, true, "chown", "chmod", "systemctl")
	runScript(t, sitePostinstall, path, "configure", "")
	runScript(t, sitePostinstall, path, "2")
	g := calls(log)
	if strings.Count(g, "chown jobsight:jobsight /var/spool/jobsight-cluster-state\n") != 2 ||
		strings.Count(g, "chmod 0700 /var/spool/jobsight-cluster-state\n") != 2 {
		t.Errorf("postinstall ran:\n%s", g)
	}
	if strings.Contains(g, "enable") || strings.Contains(g, "systemctl start") {
		t.Errorf("postinstall enables or starts the collector:\n%s", g)
	}

	for _, arg := range []string{"upgrade", "1", "remove", "0"} {
		path, log = shims(t, true, "systemctl")
		runScript(t, sitePreremove, path, arg)
		stopped := strings.Contains(calls(log), "systemctl disable --now jobsight-cluster-state.service")
		if removal := arg == "remove" || arg == "0"; stopped != (removal && systemd == nil) {
			t.Errorf("preremove %s: systemctl calls %q", arg, calls(log))
		}
	}
}

// TestInstallScriptPicksOnePackageEach runs scripts/install-packages.sh
// with dpkg and the installed programs replaced by recorders: it installs
// exactly the two packages of this architecture and refuses a directory
// holding two versions of one.
func TestInstallScriptPicksOnePackageEach(t *testing.T) {
	t.Parallel()
	path, log := shims(t, true, "dpkg", "jobsight-agent", "jobsight", "id", "jobsight-spank-install")
	// dpkg --print-architecture answers like Debian's.
	if err := os.WriteFile(filepath.Join(path, "dpkg"), []byte("#!/bin/sh\n[ \"$1\" = --print-architecture ] && { echo amd64; exit 0; }\necho \"dpkg $*\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"jobsight-agent_1.0-1_amd64.deb", "jobsight_1.0-1_amd64.deb", "jobsight-agent_1.0-1_arm64.deb", "jobsight-1.0-1.x86_64.rpm"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command("/bin/sh", append([]string{"../../scripts/install-packages.sh"}, args...)...)
		cmd.Env = []string{"PATH=" + path + ":/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(dir, "/usr", "/plugins"); err != nil {
		t.Fatalf("install-packages.sh: %v\n%s", err, out)
	}
	w := "dpkg -i " + dir + "/jobsight-agent_1.0-1_amd64.deb " + dir + "/jobsight_1.0-1_amd64.deb\n" +
		"jobsight-agent version\n" +
		"jobsight-agent check-config --config /etc/jobsight/agent.yaml\n" +
		"jobsight cluster-state --config /etc/jobsight/cluster-state.yaml --check\n" +
		"id jobsight\n" +
		"jobsight-spank-install /usr /plugins\n"
	if g := calls(log); g != w {
		t.Errorf("install-packages.sh ran:\n%s\nwant:\n%s", g, w)
	}
	os.WriteFile(filepath.Join(dir, "jobsight_1.1-1_amd64.deb"), nil, 0o644)
	if out, err := run(dir); err == nil || !strings.Contains(out, "2 packages match jobsight_*_amd64.deb") {
		t.Errorf("two versions of one package: %v\n%s", err, out)
	}
}

// The packaged /etc/logrotate.d/jobsight signals the node agent only,
// through its locked pid file: a `pkill` by name alone also reaches every
// user's `jobsight-agent run`, which passes SIGHUP on to the user's command
// (cmd/jobsight-agent's TestLogrotateSignalsTheNodeAgentOnly runs it).
func TestLogrotateSignalsThroughThePidFile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, c := range agentPackage(input{root: root}, "deb").Contents {
		if c.Destination == "/etc/logrotate.d/jobsight" {
			src = c.Source
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("the package's /etc/logrotate.d/jobsight (%q): %v", src, err)
	}
	var signals []string
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSpace(line); !strings.HasPrefix(l, "#") && (strings.Contains(l, "kill") || strings.Contains(l, "HUP")) {
			signals = append(signals, l)
		}
	}
	if len(signals) == 0 {
		t.Fatalf("%s sends no SIGHUP:\n%s", src, b)
	}
	for _, l := range signals {
		if !strings.Contains(l, "pkill -HUP -L -F \"$pidfile\" -x jobsight-agent") {
			t.Errorf("%s: %q signals by name, not through the node agent's locked pid file", src, l)
		}
	}
	if !strings.Contains(string(b), "/var/lib/jobsight/agent@*.pid") {
		t.Errorf("%s does not read the node agent's pid file (state_dir/agent@<node>.pid)", src)
	}
}
