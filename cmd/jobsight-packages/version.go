package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The version of everything Jobsight ships — both packages, every
// binary's `version`, the Grafana plugin (package.json, plugin.json) —
// comes from one checked-in file, VERSION at the repository root: the
// last release (docs/packages.md, "Versions"). A release sets it, in the
// commit tagged v<VERSION>.
//
//	release build (make release, --release)     VERSION               0.1.0
//	HEAD tagged v<VERSION>, no local changes      VERSION               0.1.0
//	any other commit (between releases)           VERSION+git<N>.<sha>  0.1.0+git412.82096ee
//	  with uncommitted changes                    ... .dirty            0.1.0+git412.82096ee.dirty
//	outside a git checkout (a source archive)     VERSION               0.1.0
//
// N is the number of commits reachable from HEAD (git rev-list --count),
// so that later builds of one branch sort later; "+" sorts them after the
// release VERSION names and before the next one, for dpkg and rpm alike.
// The plugin always carries VERSION itself (Grafana's catalogue and
// installer take plain semantic versions).

// versionFile is the file, relative to the repository root.
const versionFile = "VERSION"

// releaseVersion is what VERSION may hold: a plain release number.
var releaseVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// baseVersion reads VERSION in root.
func baseVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, versionFile))
	if err != nil {
		return "", fmt.Errorf("the version file: %w (it holds the release number, e.g. 0.1.0)", err)
	}
	v := strings.TrimSpace(string(b))
	if !releaseVersion.MatchString(v) {
		return "", fmt.Errorf("%s holds %q: it must hold one release number, MAJOR.MINOR.PATCH (e.g. 0.1.0)", versionFile, v)
	}
	return v, nil
}

// releaseTag is a release tag: v1.2.3. Other tags (issue markers and the
// like) are not versions and are not looked at.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// gitState is what the version of a build between releases is made of.
type gitState struct {
	tagsAtHead []string // git tag --points-at HEAD
	commits    int      // git rev-list --count HEAD
	commit     string   // git rev-parse --short HEAD
	dirty      bool     // tracked files differ from HEAD
}

// packageVersion is the package version of base (VERSION's content) for
// a checkout in state g: base itself at the clean commit tagged v<base>,
// base+git<commits>.<commit>[.dirty] elsewhere. A HEAD tagged with another
// release than base is an error: VERSION was not set for that release.
func packageVersion(base string, g gitState) (string, error) {
	if !releaseVersion.MatchString(base) {
		return "", fmt.Errorf("version %q is not a release number (MAJOR.MINOR.PATCH)", base)
	}
	tagged := false
	for _, t := range g.tagsAtHead {
		if !releaseTag.MatchString(t) {
			continue
		}
		if t != "v"+base {
			return "", fmt.Errorf("HEAD is tagged %s but %s holds %s: a release sets %s (and package.json) in the commit it tags", t, versionFile, base, versionFile)
		}
		tagged = true
	}
	if tagged && !g.dirty {
		return base, nil
	}
	if g.commits <= 0 || !regexp.MustCompile(`^[0-9a-f]{4,40}$`).MatchString(g.commit) {
		return "", fmt.Errorf("version: commit count %d or commit %q unknown", g.commits, g.commit)
	}
	v := fmt.Sprintf("%s+git%d.%s", base, g.commits, g.commit)
	if g.dirty {
		v += ".dirty"
	}
	return v, checkVersion(v)
}

// validVersion is what both dpkg (an upstream version followed by our
// "-1" revision: no hyphen, a leading digit) and rpm (no hyphen) accept.
var validVersion = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

// checkVersion refuses a version that dpkg or rpm would refuse or
// misread.
func checkVersion(v string) error {
	if !validVersion.MatchString(v) {
		return fmt.Errorf("version %q: a package version starts with a digit and holds only letters, digits and . + ~", v)
	}
	return nil
}
