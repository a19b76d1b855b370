package collector

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Version is a host's cgroup layout.
type Version uint8

// The cgroup layouts. VersionAuto asks Detect to find out.
const (
	VersionAuto   Version = iota // detect from the cgroup root
	VersionV1                    // legacy: one hierarchy per controller under the root
	VersionV2                    // unified: the root is a cgroup2 file system
	VersionHybrid                // v1 controllers, plus a cgroup2 hierarchy at <root>/unified for process tracking only
)

// String returns the name used in configuration and logs.
func (v Version) String() string {
	switch v {
	case VersionAuto:
		return "auto"
	case VersionV1:
		return "v1"
	case VersionV2:
		return "v2"
	case VersionHybrid:
		return "hybrid"
	}
	return fmt.Sprintf("Version(%d)", uint8(v))
}

// ParseVersion parses "auto", "v1", "v2" or "hybrid" (the form String
// returns), for the hidden option that forces a layout in tests.
func ParseVersion(s string) (Version, error) {
	for v := VersionAuto; v <= VersionHybrid; v++ {
		if v.String() == s {
			return v, nil
		}
	}
	return VersionAuto, fmt.Errorf("cgroup version %q: want auto, v1, v2 or hybrid", s)
}

// File system magic numbers from linux/magic.h.
const (
	cgroupSuperMagic  = 0x27e0eb
	cgroup2SuperMagic = 0x63677270
	tmpfsMagic        = 0x01021994
)

// Detect finds the cgroup layout mounted at root (normally /sys/fs/cgroup)
// from the file system types of root and root/unified: a cgroup2 root is
// v2; a tmpfs root holding per-controller v1 mounts is v1, or hybrid when
// root/unified is cgroup2.
func Detect(root string) (Version, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return VersionAuto, fileError("detecting cgroup version: statfs", root, err)
	}
	var unified int64
	var uerr error
	if int64(st.Type) == tmpfsMagic {
		var ust unix.Statfs_t
		uerr = unix.Statfs(filepath.Join(root, "unified"), &ust)
		unified = int64(ust.Type)
	}
	v, err := versionFromMagic(int64(st.Type), unified, uerr == nil)
	if err != nil {
		return VersionAuto, fmt.Errorf("detecting cgroup version of %s: %w", root, err)
	}
	return v, nil
}

// versionFromMagic decides the layout from the file system type of the
// root and, when that is tmpfs, of root/unified (unifiedOK is false when
// root/unified does not exist).
func versionFromMagic(root, unified int64, unifiedOK bool) (Version, error) {
	switch root {
	case cgroup2SuperMagic:
		return VersionV2, nil
	case tmpfsMagic:
		if unifiedOK && unified == cgroup2SuperMagic {
			return VersionHybrid, nil
		}
		return VersionV1, nil
	case cgroupSuperMagic:
		return VersionAuto, fmt.Errorf("root is a single cgroup v1 hierarchy, not the directory holding them (file system type %#x)", root)
	}
	return VersionAuto, fmt.Errorf("not a cgroup file system (file system type %#x); set the cgroup version explicitly", root)
}
