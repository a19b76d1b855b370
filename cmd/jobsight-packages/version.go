package main

import (
	"fmt"
	"regexp"
	"strings"
)

// releaseTag is a release tag: v1.2.3 (or 1.2.3), with an optional
// pre-release after a hyphen (v1.3.0-rc1). Other tags (issue markers and
// the like) are not versions and are not used.
var releaseTag = regexp.MustCompile(`^v?([0-9]+(?:\.[0-9]+)*)(?:-([0-9A-Za-z.]+))?$`)

// afterTag is what git describe adds to a tag: the commits since it and
// the abbreviated commit.
var afterTag = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]+)$`)

// commitOnly is git describe --always's answer where no tag is reachable.
var commitOnly = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// packageVersion is the upstream version of the packages for a `git
// describe --tags --match 'v[0-9]*' --always --dirty` answer, valid for
// both dpkg and rpm, and ordered as the commits are:
//
//	v1.2.3                 1.2.3
//	v1.3.0-rc1             1.3.0~rc1          (before 1.3.0)
//	v1.2.3-5-gabc1234      1.2.3+git5.abc1234 (after 1.2.3)
//	abc1234 (no tag)       0.0.0~git<commits>.abc1234 (before any release)
//
// A -dirty suffix (uncommitted changes) becomes .dirty. commits is the
// number of commits reachable from HEAD (git rev-list --count HEAD), used
// only when no release tag is reachable, so that later builds sort later.
func packageVersion(describe string, commits int) (string, error) {
	d := strings.TrimSpace(describe)
	dirty := strings.HasSuffix(d, "-dirty")
	d = strings.TrimSuffix(d, "-dirty")
	var v string
	switch {
	case commitOnly.MatchString(d):
		if commits <= 0 {
			return "", fmt.Errorf("version: %q names no release tag and the commit count is unknown", describe)
		}
		v = fmt.Sprintf("0.0.0~git%d.%s", commits, d)
	case afterTag.MatchString(d):
		m := afterTag.FindStringSubmatch(d)
		base, err := tagVersion(m[1])
		if err != nil {
			return "", fmt.Errorf("version: %q: %w", describe, err)
		}
		v = fmt.Sprintf("%s+git%s.%s", base, m[2], m[3])
	default:
		base, err := tagVersion(d)
		if err != nil {
			return "", fmt.Errorf("version: %q: %w", describe, err)
		}
		v = base
	}
	if dirty {
		v += ".dirty"
	}
	return v, checkVersion(v)
}

// tagVersion is the package version of a release tag.
func tagVersion(tag string) (string, error) {
	m := releaseTag.FindStringSubmatch(tag)
	if m == nil {
		return "", fmt.Errorf("tag %q is not a release (v1.2.3 or v1.2.3-rc1)", tag)
	}
	if m[2] != "" {
		return m[1] + "~" + m[2], nil
	}
	return m[1], nil
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
