package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// The checked-in version files agree: VERSION, package.json (the
// plugin's version), package-lock.json, plugin.json (%VERSION%, filled in
// by the build). Drift in any of them fails here, before any build.
func TestVersionFilesAgree(t *testing.T) {
	v, err := version("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !releaseVersion.MatchString(v) {
		t.Fatalf("VERSION %q", v)
	}

	// And the check sees drift: each file set to another version in turn.
	write := func(root, file, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := map[string]string{
		"VERSION":           "0.3.0\n",
		"package.json":      `{"name": "x", "version": "0.3.0"}`,
		"package-lock.json": `{"name": "x", "version": "0.3.0", "packages": {"": {"version": "0.3.0"}}}`,
		"plugin.json":       `{"id": "x", "info": {"version": "%VERSION%"}}`,
	}
	root := t.TempDir()
	for f, c := range good {
		write(root, f, c)
	}
	if v, err := version(root); err != nil || v != "0.3.0" {
		t.Fatalf("agreeing files: %q, %v", v, err)
	}
	for file, bad := range map[string]string{
		"package.json":      `{"name": "x", "version": "0.2.9"}`,
		"package-lock.json": `{"name": "x", "version": "0.3.0", "packages": {"": {"version": "0.2.9"}}}`,
		"plugin.json":       `{"id": "x", "info": {"version": "0.2.9"}}`,
		"VERSION":           "0.2.9\n",
	} {
		write(root, file, bad)
		_, err := version(root)
		if err == nil || !strings.Contains(err.Error(), "0.2.9") {
			t.Errorf("%s drifted to 0.2.9: %v; want an error naming it", file, err)
		}
		write(root, file, good[file])
	}
	write(root, "VERSION", "v0.3.0\n")
	if _, err := version(root); err == nil || !strings.Contains(err.Error(), `VERSION holds "v0.3.0"`) {
		t.Errorf("VERSION v0.3.0: %v", err)
	}
}

func TestChangelogSection(t *testing.T) {
	const released = "# Changelog\n\nIntro.\n\n## Unreleased\n\n## 0.2.0 — 2027-01-02\n\n### Added\n- b\n\n## 0.1.0 — 2026-11-26\n\n- a\n"
	head, body, err := changelogSection(released, "0.2.0")
	if err != nil || head != "## 0.2.0 — 2027-01-02" || body != "### Added\n- b" {
		t.Errorf("0.2.0: %q %q %v", head, body, err)
	}
	if _, body, err := changelogSection(released, "0.1.0"); err != nil || body != "- a" {
		t.Errorf("0.1.0: %q %v", body, err)
	}
	if _, _, err := changelogSection(released, "0.3.0"); err == nil || !strings.Contains(err.Error(), `no section "## 0.3.0" (it has Unreleased, 0.2.0, 0.1.0)`) {
		t.Errorf("0.3.0: %v", err)
	}
	unreleased := strings.Replace(released, "## Unreleased\n", "## Unreleased\n\n### Fixed\n- c\n", 1)
	if _, _, err := changelogSection(unreleased, "0.2.0"); err == nil || !strings.Contains(err.Error(), "Unreleased section has entries") {
		t.Errorf("entries under Unreleased: %v", err)
	}
	if _, _, err := changelogSection("## 0.2.0\n\n## 0.1.0\n- a\n", "0.2.0"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty section: %v", err)
	}
}

// fakeRelease writes the artefacts of release v for one architecture
// (amd64) as real .deb, .rpm (nfpm, as cmd/jobsight-packages writes them)
// and plugin archives; pkgVersion overrides the version inside one file.
func fakeRelease(t *testing.T, dir, v string, inside map[string]string) {
	t.Helper()
	want, err := expected(v, []string{"amd64"})
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range want {
		iv := v
		if o, ok := inside[name]; ok {
			iv = o
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch a.kind {
		case "deb", "rpm":
			info := nfpm.WithDefaults(&nfpm.Info{Name: a.name, Arch: "amd64", Platform: "linux", Version: iv, Release: "1",
				VersionSchema: "none", Maintainer: "test <t@example.org>", Description: "test", Overridables: nfpm.Overridables{}})
			var p nfpm.Packager = deb.Default
			if a.kind == "rpm" {
				p = rpm.DefaultRPM
			}
			err = p.Package(info, f)
		default:
			zw := zip.NewWriter(f)
			w, _ := zw.Create(a.name + "/plugin.json")
			_, _ = w.Write([]byte(`{"id": "` + a.name + `", "executable": "gpx_jobsight", "info": {"version": "` + iv + `"}}`))
			for _, p := range strings.Split(a.arch, ",") {
				w, _ := zw.Create(a.name + "/gpx_jobsight_" + p)
				_, _ = w.Write([]byte("\x7fELF...{\"time\":1764000000000,\"pluginID\":\"" + a.name + "\",\"version\":\"" + iv + "\"}..."))
			}
			err = zw.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// Every artefact is read from its contents (a .deb's control file, an
// .rpm's header, the plugin's plugin.json and its executables' build
// info), and one that says another version than VERSION fails the
// release, named.
func TestArtefactVersionsAreReadFromTheirContents(t *testing.T) {
	dir := t.TempDir()
	fakeRelease(t, dir, "9.8.7", nil)
	names, err := verify(dir, "9.8.7", []string{"amd64"})
	if err != nil || len(names) != 7 {
		t.Fatalf("a whole release: %v, %v", names, err)
	}
	// The readers agree with dpkg-deb and rpm where they are installed.
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		out, err := exec.Command("dpkg-deb", "-f", filepath.Join(dir, "jobsight-agent_9.8.7-1_amd64.deb"), "Version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "9.8.7-1" {
			t.Errorf("dpkg-deb -f: %q %v", out, err)
		}
	}
	if _, err := exec.LookPath("rpm"); err == nil {
		out, err := exec.Command("rpm", "-qp", "--qf", "%{NAME} %{VERSION}-%{RELEASE} %{ARCH}", filepath.Join(dir, "jobsight-9.8.7-1.x86_64.rpm")).Output()
		a, rerr := readRPM(filepath.Join(dir, "jobsight-9.8.7-1.x86_64.rpm"))
		if err != nil || rerr != nil || string(out) != a.name+" "+a.version+"-"+a.release+" "+a.arch || a.version != "9.8.7" {
			t.Errorf("rpm -qp: %q %v; readRPM: %+v %v", out, err, a, rerr)
		}
	}

	for file, inside := range map[string]string{
		"jobsight-agent_9.8.7-1_amd64.deb":                "9.8.6",
		"jobsight-9.8.7-1.x86_64.rpm":                     "9.8.7+git3.abc1234",
		"jobsight-slurm-datasource-9.8.7.linux_amd64.zip": "0.1.0",
	} {
		dir := t.TempDir()
		fakeRelease(t, dir, "9.8.7", map[string]string{file: inside})
		_, err := verify(dir, "9.8.7", []string{"amd64"})
		if err == nil || !strings.Contains(err.Error(), file+": version "+inside+" inside, want VERSION's 9.8.7") {
			t.Errorf("%s saying %s inside: %v", file, inside, err)
		}
	}
	// The plugin's executables are checked apart from its plugin.json.
	dir = t.TempDir()
	fakeRelease(t, dir, "9.8.7", nil)
	zf := filepath.Join(dir, "jobsight-slurm-datasource-9.8.7.linux_amd64.zip")
	f, _ := os.Create(zf)
	zw := zip.NewWriter(f)
	w, _ := zw.Create("jobsight-slurm-datasource/plugin.json")
	_, _ = w.Write([]byte(`{"id": "jobsight-slurm-datasource", "executable": "gpx_jobsight", "info": {"version": "9.8.7"}}`))
	w, _ = zw.Create("jobsight-slurm-datasource/gpx_jobsight_linux_amd64")
	_, _ = w.Write([]byte(`{"time":1,"pluginID":"jobsight-slurm-datasource","version":"0.1.0"}`))
	zw.Close()
	f.Close()
	if _, err := verify(dir, "9.8.7", []string{"amd64"}); err == nil || !strings.Contains(err.Error(), "gpx_jobsight_linux_amd64 was built as version 0.1.0") {
		t.Errorf("an executable built as 0.1.0: %v", err)
	}

	// A missing artefact and a stray file are named.
	dir = t.TempDir()
	fakeRelease(t, dir, "9.8.7", nil)
	os.Remove(filepath.Join(dir, "jobsight_9.8.7-1_amd64.deb"))
	os.WriteFile(filepath.Join(dir, "jobsight_9.8.6-1_amd64.deb"), []byte("!<arch>\n"), 0o644)
	_, err = verify(dir, "9.8.7", []string{"amd64"})
	if err == nil || !strings.Contains(err.Error(), "jobsight_9.8.7-1_amd64.deb: missing") || !strings.Contains(err.Error(), "jobsight_9.8.6-1_amd64.deb: not an artefact of release 9.8.7") {
		t.Errorf("missing and stray files: %v", err)
	}
}

// The release make release built (JOBSIGHT_RELEASE_DIR; make release runs
// this test on it): every artefact there says VERSION inside, SHA256SUMS
// holds their sums, RELEASE_NOTES.md holds VERSION's CHANGELOG section,
// and the packaged programs print VERSION as their version (the arm64
// ones under qemu-aarch64-static where it is installed).
func TestReleaseArtefacts(t *testing.T) {
	dir := os.Getenv("JOBSIGHT_RELEASE_DIR")
	if dir == "" {
		t.Skip("JOBSIGHT_RELEASE_DIR is not set: make release builds the release and runs this test on it")
	}
	arches := strings.Split(envOr("JOBSIGHT_RELEASE_ARCH", "amd64,arm64"), ",")
	// The checkout the release was made from (make release: this one).
	root := envOr("JOBSIGHT_RELEASE_ROOT", "../..")
	v, err := version(root)
	if err != nil {
		t.Fatal(err)
	}
	names, err := verify(dir, v, arches)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		listed[name] = sum
	}
	for _, n := range names {
		got, err := fileSHA256(filepath.Join(dir, n))
		if err != nil || listed[n] != got {
			t.Errorf("SHA256SUMS: %s listed as %q, is %q (%v)", n, listed[n], got, err)
		}
	}
	if len(listed) != len(names) {
		t.Errorf("SHA256SUMS lists %d files, the release has %d", len(listed), len(names))
	}
	notes, err := os.ReadFile(filepath.Join(dir, "RELEASE_NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	head, body, err := changelogSection(string(cl), v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(notes), "# Jobsight "+strings.TrimSpace(strings.TrimPrefix(head, "##"))+"\n") || !strings.Contains(string(notes), body) {
		t.Errorf("RELEASE_NOTES.md does not hold CHANGELOG.md's %q section", head)
	}

	// What a site sees after installing: `version` of both programs.
	for _, arch := range arches {
		var prefix []string
		if arch != runtime.GOARCH {
			q, err := exec.LookPath("qemu-aarch64-static")
			if arch != "arm64" || err != nil {
				t.Logf("%s programs not run: no emulator for %s here", arch, arch)
				continue
			}
			prefix = []string{q, "-L", "/usr/aarch64-linux-gnu"}
		}
		unpacked := t.TempDir()
		for _, p := range []string{"jobsight-agent", "jobsight"} {
			if out, err := exec.Command("dpkg-deb", "-x", filepath.Join(dir, p+"_"+v+"-1_"+arch+".deb"), unpacked).CombinedOutput(); err != nil {
				t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
			}
		}
		for prog, path := range map[string]string{"jobsight-agent": "usr/sbin/jobsight-agent", "jobsight": "usr/bin/jobsight"} {
			args := append(append([]string{}, prefix...), filepath.Join(unpacked, path), "version")
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			if err != nil || string(out) != prog+" "+v+"\n" {
				t.Errorf("%s (%s) version: %q, %v; want %q", prog, arch, out, err, prog+" "+v+"\n")
			}
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
