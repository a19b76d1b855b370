package amd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// renderMinor returns the minor number of the DRM render node
// (/dev/dri/renderD<minor>) of the PCI device at bdf, found as
// <sysRoot>/bus/pci/devices/<bdf>/drm/renderD<minor>; -1 when there is none
// or bdf is not a PCI address.
func renderMinor(sysRoot, bdf string) int {
	if _, ok := pciDevice(bdf); !ok || sysRoot == "" {
		return -1
	}
	entries, err := os.ReadDir(filepath.Join(sysRoot, "bus", "pci", "devices", strings.ToLower(bdf), "drm"))
	if err != nil {
		return -1
	}
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "renderD"); ok {
			if minor, err := strconv.Atoi(n); err == nil && minor >= 0 {
				return minor
			}
		}
	}
	return -1
}

// parseRenderName reads amd-smi's "renderD128" (amd-smi list -e); -1 when
// it is not a render node name.
func parseRenderName(s string) int {
	n, ok := strings.CutPrefix(strings.TrimSpace(s), "renderD")
	if !ok {
		return -1
	}
	minor, err := strconv.Atoi(n)
	if err != nil || minor < 0 {
		return -1
	}
	return minor
}

// sysfsMinorApplies reports whether the PCI address of a device names its
// own PCI function, so that sysfs can give its render node: true for whole
// GPUs and GCDs, and for the first compute partition of a physical GPU
// (function 0); the other partitions' addresses are not PCI functions.
func sysfsMinorApplies(partition, bdf string) bool {
	switch partition {
	case "DPX", "TPX", "QPX", "CPX":
		return strings.HasSuffix(bdf, ".0")
	}
	return true
}
