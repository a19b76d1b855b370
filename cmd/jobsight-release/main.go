// Command jobsight-release checks and finishes a release (make release;
// docs/packages.md, "Releases"):
//
//	go run ./cmd/jobsight-release check            before building: VERSION, package.json,
//	                                                package-lock.json and plugin.json agree, and
//	                                                CHANGELOG.md has VERSION's section and no
//	                                                unreleased entries
//	go run ./cmd/jobsight-release finish DIR       after building into DIR: every artefact (both
//	                                                packages as .deb and .rpm per architecture,
//	                                                the plugin archives) is there and says
//	                                                VERSION inside; writes DIR/SHA256SUMS and
//	                                                DIR/RELEASE_NOTES.md (VERSION's CHANGELOG
//	                                                section)
//
// Both take --root (the repository, default .); finish takes --arch
// (default amd64,arm64).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "finish") {
		fmt.Fprintln(stderr, "usage: jobsight-release check [--root DIR] | finish [--root DIR] [--arch amd64,arm64] RELEASE_DIR")
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("jobsight-release "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository")
	arches := fs.String("arch", "amd64,arm64", "finish: the architectures the packages were built for")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var err error
	switch {
	case cmd == "check" && fs.NArg() == 0:
		var v string
		if v, err = check(*root); err == nil {
			fmt.Fprintf(stdout, "release %s: VERSION, package.json, package-lock.json, plugin.json and CHANGELOG.md agree\n", v)
		}
	case cmd == "finish" && fs.NArg() == 1:
		err = finish(*root, fs.Arg(0), strings.Split(*arches, ","), stdout)
	default:
		fmt.Fprintf(stderr, "jobsight-release %s: wrong arguments %q\n", cmd, fs.Args())
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobsight-release:", err)
		return 1
	}
	return 0
}

// releaseVersion is what VERSION may hold (cmd/jobsight-packages reads it
// the same way).
var releaseVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// version reads VERSION and checks that every other file holding the
// version says the same: package.json (the plugin's version: the
// frontend build writes it into dist/plugin.json, the backend build into
// the executable's build info), package-lock.json, and plugin.json,
// which holds %VERSION% for the build to fill in, or the version.
func version(root string) (string, error) {
	b, err := readIn(root, "VERSION")
	if err != nil {
		return "", fmt.Errorf("the version file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if !releaseVersion.MatchString(v) {
		return "", fmt.Errorf("VERSION holds %q: it must hold one release number, MAJOR.MINOR.PATCH (e.g. 0.1.0)", v)
	}
	var problems []string
	read := func(file string, into any) bool {
		b, err := readIn(root, file)
		if err == nil {
			err = json.Unmarshal(b, into)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
		}
		return err == nil
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if read("package.json", &pkg) && pkg.Version != v {
		problems = append(problems, fmt.Sprintf("package.json says version %q", pkg.Version))
	}
	var lock struct {
		Version  string `json:"version"`
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if read("package-lock.json", &lock) {
		if lock.Version != v {
			problems = append(problems, fmt.Sprintf("package-lock.json says version %q", lock.Version))
		}
		if p, ok := lock.Packages[""]; ok && p.Version != v {
			problems = append(problems, fmt.Sprintf("package-lock.json's packages[\"\"] says version %q", p.Version))
		}
	}
	var plugin struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if read("plugin.json", &plugin) && plugin.Info.Version != "%VERSION%" && plugin.Info.Version != v {
		problems = append(problems, fmt.Sprintf("plugin.json says info.version %q (want %%VERSION%%, which the build fills in)", plugin.Info.Version))
	}
	if len(problems) > 0 {
		return v, fmt.Errorf("VERSION holds %s, but %s: set them to VERSION's (npm version --no-git-tag-version %s)", v, strings.Join(problems, "; "), v)
	}
	return v, nil
}

// heading is a CHANGELOG.md section heading: "## 0.1.0 — 2026-11-26",
// "## Unreleased".
var heading = regexp.MustCompile(`^## +(\S+)`)

// changelogSection is the section of CHANGELOG.md for version v: its
// heading line and body. A non-empty Unreleased section is an error: a
// release of v would ship changes its notes do not list.
func changelogSection(changelog, v string) (head, body string, err error) {
	sections := map[string][2]string{}
	var order []string
	var cur string
	var lines []string
	flush := func() {
		if cur != "" {
			s := sections[cur]
			s[1] = strings.TrimSpace(strings.Join(lines, "\n"))
			sections[cur] = s
		}
	}
	for _, line := range strings.Split(changelog, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			flush()
			cur, lines = m[1], nil
			if _, dup := sections[cur]; dup {
				return "", "", fmt.Errorf("CHANGELOG.md has two sections %q", cur)
			}
			sections[cur] = [2]string{strings.TrimSpace(line), ""}
			order = append(order, cur)
			continue
		}
		lines = append(lines, line)
	}
	flush()
	if u, ok := sections["Unreleased"]; ok && u[1] != "" {
		return "", "", fmt.Errorf("CHANGELOG.md's Unreleased section has entries: this tree is not release %s. To release, set VERSION (and package.json) to the new version and rename \"## Unreleased\" to \"## <version> — <date>\"", v)
	}
	s, ok := sections[v]
	if !ok {
		return "", "", fmt.Errorf("CHANGELOG.md has no section \"## %s\" (it has %s): a release's notes are its section", v, strings.Join(order, ", "))
	}
	if s[1] == "" {
		return "", "", fmt.Errorf("CHANGELOG.md's section %q is empty", s[0])
	}
	return s[0], s[1], nil
}

// check is everything make release checks before building anything.
func check(root string) (string, error) {
	v, err := version(root)
	if err != nil {
		return "", err
	}
	b, err := readIn(root, "CHANGELOG.md")
	if err != nil {
		return "", err
	}
	if _, _, err := changelogSection(string(b), v); err != nil {
		return "", err
	}
	return v, nil
}

// expected lists the files of release v for the architectures (Go's
// names) and what each must say of itself.
func expected(v string, arches []string) (map[string]artefact, error) {
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
	want := map[string]artefact{}
	for _, a := range arches {
		if rpmArch[a] == "" {
			return nil, fmt.Errorf("--arch %q: amd64 or arm64", a)
		}
		for _, p := range []string{"jobsight-agent", "jobsight"} {
			want[fmt.Sprintf("%s_%s-1_%s.deb", p, v, a)] = artefact{kind: "deb", name: p, version: v, release: "1", arch: a}
			want[fmt.Sprintf("%s-%s-1.%s.rpm", p, v, rpmArch[a])] = artefact{kind: "rpm", name: p, version: v, release: "1", arch: rpmArch[a]}
		}
	}
	// The plugin archives (make plugin-archive): all platforms, and one
	// per platform.
	const id = "jobsight-slurm-datasource"
	want[id+"-"+v+".zip"] = artefact{kind: "plugin", name: id, version: v, arch: "linux_amd64,linux_arm64"}
	for _, p := range []string{"linux_amd64", "linux_arm64"} {
		want[id+"-"+v+"."+p+".zip"] = artefact{kind: "plugin", name: id, version: v, arch: p}
	}
	return want, nil
}

// generated are the files finish writes into the release directory.
var generated = []string{"SHA256SUMS", "RELEASE_NOTES.md"}

// verify checks that dir holds exactly the artefacts of release v and that
// each says v inside (package control data, RPM header, plugin.json and the
// plugin executables' build info). Every problem is named, one a line.
func verify(dir, v string, arches []string) ([]string, error) {
	want, err := expected(v, arches)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var problems, names []string
	seen := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if slices.Contains(generated, n) {
			continue
		}
		w, ok := want[n]
		if !ok || !e.Type().IsRegular() {
			problems = append(problems, fmt.Sprintf("%s: not an artefact of release %s", n, v))
			continue
		}
		seen[n] = true
		names = append(names, n)
		file := filepath.Join(dir, n)
		var got artefact
		switch w.kind {
		case "deb":
			got, err = readDeb(file)
		case "rpm":
			got, err = readRPM(file)
		default:
			got, err = readPluginZip(file)
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		problems = append(problems, compare(n, w, got)...)
	}
	for n := range want {
		if !seen[n] {
			problems = append(problems, fmt.Sprintf("%s: missing", n))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return nil, errors.New("the release directory " + dir + " is not release " + v + ":\n  " + strings.Join(problems, "\n  "))
	}
	sort.Strings(names)
	return names, nil
}

func compare(file string, want, got artefact) []string {
	var p []string
	if got.name != want.name || got.arch != want.arch || got.release != want.release {
		p = append(p, fmt.Sprintf("%s: is %s %s-%s for %s inside, want %s for %s", file, got.name, got.version, got.release, got.arch, want.name, want.arch))
	}
	if got.version != want.version {
		p = append(p, fmt.Sprintf("%s: version %s inside, want VERSION's %s", file, got.version, want.version))
	}
	for exe, v := range got.execVersions {
		if v != want.version {
			p = append(p, fmt.Sprintf("%s: %s was built as version %s, want VERSION's %s", file, exe, v, want.version))
		}
	}
	return p
}

// finish verifies the release directory and writes SHA256SUMS and
// RELEASE_NOTES.md into it.
func finish(root, dir string, arches []string, stdout io.Writer) error {
	v, err := version(root)
	if err != nil {
		return err
	}
	cl, err := readIn(root, "CHANGELOG.md")
	if err != nil {
		return err
	}
	head, body, err := changelogSection(string(cl), v)
	if err != nil {
		return err
	}
	names, err := verify(dir, v, arches)
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, n := range names {
		s, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", s, n)
	}
	notes := fmt.Sprintf("# Jobsight %s\n\n%s\n\n## Artefacts\n\n", strings.TrimSpace(strings.TrimPrefix(head, "##")), body)
	for _, n := range names {
		notes += "- `" + n + "`\n"
	}
	notes += "\nVerify them with `sha256sum -c SHA256SUMS`. Installing: README.md (Install) and docs/packages.md.\n"
	out, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := out.WriteFile("SHA256SUMS", []byte(sums.String()), 0o644); err != nil {
		return err
	}
	if err := out.WriteFile("RELEASE_NOTES.md", []byte(notes), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s in %s: %d artefacts, each saying %s inside; SHA256SUMS, RELEASE_NOTES.md written\n", v, dir, len(names), v)
	return nil
}

// readIn reads the file name inside dir through an os.Root: a name or
// link leading out of dir is refused.
func readIn(dir, name string) ([]byte, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name)
}

// openFile opens file through an os.Root on its directory, so that a
// release directory's entry linking out of it is refused.
func openFile(file string) (*os.File, error) {
	r, err := os.OpenRoot(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(filepath.Base(file))
}

func fileSHA256(file string) (string, error) {
	f, err := openFile(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
