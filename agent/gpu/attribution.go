package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// How the devices a job holds were learned, in order of preference. The
// method is written into the documents (gpu.attribution).
const (
	// AttributionSlurm: Slurm's own list of the job's GPUs on this node
	// (SLURM_JOB_GPUS in the prolog environment that slurmd sets).
	AttributionSlurm = "slurm"
	// AttributionCgroup: the device nodes the job's cgroup may open
	// (cgroup v1 devices.list, with ConstrainDevices=yes).
	AttributionCgroup = "cgroup"
	// AttributionEnvironment: a standalone command's CUDA_VISIBLE_DEVICES
	// or ROCR_VISIBLE_DEVICES.
	AttributionEnvironment = "environment"
	// AttributionProcesses: no allocation is known; the job is taken to
	// hold the devices its processes run on. A held-but-idle GPU cannot be
	// seen this way.
	AttributionProcesses = "processes"
)

// Character-device majors of GPU device nodes, for devices.list.
const (
	MajorNVIDIA = 195 // /dev/nvidia<minor>
	MajorDRI    = 226 // /dev/dri/renderD<minor> (AMD)
)

// ParseDeviceList parses a GPU list as Slurm and the vendors' runtimes write
// it (SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES): entries
// separated by commas, each an index ("3") or a UUID ("GPU-…", "MIG-…").
// An empty list or Slurm's "NoDevFiles" is no device. Anything else is an
// error naming the bad entry: the list comes from outside the agent.
func ParseDeviceList(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "NoDevFiles" {
		return nil, nil
	}
	if len(s) > 16384 {
		return nil, fmt.Errorf("GPU list of %d bytes is too long", len(s))
	}
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, fmt.Errorf("GPU list %q: empty entry", clip(s))
		case isIndex(e):
		case isUUID(e):
		default:
			return nil, fmt.Errorf("GPU list %q: entry %q is neither an index nor a GPU UUID", clip(s), clip(e))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func isIndex(e string) bool {
	if len(e) > 4 {
		return false
	}
	_, err := strconv.ParseUint(e, 10, 16)
	return err == nil
}

// isUUID accepts the UUID forms NVML and AMD SMI print: an optional
// "GPU-"/"MIG-" prefix (MIG's older form has slashes: "MIG-GPU-…/1/0"),
// then hex digits and dashes.
func isUUID(e string) bool {
	if len(e) < 8 || len(e) > 128 {
		return false
	}
	for _, r := range e {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '/') {
			return false
		}
	}
	return true
}

// Resolve maps a parsed list onto device indices. A UUID names any device
// (a MIG instance's included). A number n names the n-th whole GPU in
// Slurm's order: Slurm numbers a node's GPUs by their sorted device files
// (/dev/nvidia<minor>, /dev/dri/renderD<minor>), so the whole GPUs are
// ordered by Minor when every one is known, else by Index. An entry that
// names no device is an error; the indices found so far are still
// returned, sorted.
func Resolve(devices []Device, entries []string) ([]int, error) {
	order := slurmOrder(devices)
	var held []int
	var unknown []string
	for _, e := range entries {
		found := -1
		if n, err := strconv.Atoi(e); err == nil && isIndex(e) {
			if n < len(order) {
				found = order[n]
			}
		} else {
			for _, d := range devices {
				if d.UUID != "" && strings.EqualFold(d.UUID, e) {
					found = d.Index
					break
				}
			}
		}
		if found < 0 {
			unknown = append(unknown, e)
			continue
		}
		if !slices.Contains(held, found) {
			held = append(held, found)
		}
	}
	slices.Sort(held)
	if len(unknown) > 0 {
		return held, fmt.Errorf("GPUs %s are not devices of this node (%d known)", clip(strings.Join(unknown, ",")), len(devices))
	}
	return held, nil
}

// slurmOrder returns the Index of the whole GPUs in Slurm's order.
func slurmOrder(devices []Device) []int {
	var whole []Device
	byMinor := true
	for _, d := range devices {
		if d.Parent < 0 {
			whole = append(whole, d)
			byMinor = byMinor && d.Minor >= 0
		}
	}
	slices.SortStableFunc(whole, func(a, b Device) int {
		if byMinor && a.Minor != b.Minor {
			return a.Minor - b.Minor
		}
		return a.Index - b.Index
	})
	order := make([]int, len(whole))
	for i, d := range whole {
		order[i] = d.Index
	}
	return order
}

// CgroupDevice is one character device a cgroup may open; Minor -1 is any.
type CgroupDevice struct{ Major, Minor int }

// ParseDevicesList parses a cgroup v1 devices.list ("c 195:0 rwm" per
// line). all is true when the cgroup may open every device ("a *:* rwm"),
// which says nothing about which GPUs the job holds.
func ParseDevicesList(data []byte) (devs []CgroupDevice, all bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, false, fmt.Errorf("devices.list line %d %q: want \"<type> <major>:<minor> <access>\"", n, clip(sc.Text()))
		}
		if f[0] == "a" {
			all = true
			continue
		}
		maj, mnr, ok := strings.Cut(f[1], ":")
		if !ok || f[0] != "c" && f[0] != "b" {
			return nil, false, fmt.Errorf("devices.list line %d %q: want \"<type> <major>:<minor> <access>\"", n, clip(sc.Text()))
		}
		if f[0] != "c" {
			continue
		}
		d := CgroupDevice{Minor: -1}
		if d.Major, err = devNum(maj); err != nil {
			return nil, false, fmt.Errorf("devices.list line %d: major: %w", n, err)
		}
		if d.Minor, err = devNum(mnr); err != nil {
			return nil, false, fmt.Errorf("devices.list line %d: minor: %w", n, err)
		}
		devs = append(devs, d)
	}
	return devs, all, sc.Err()
}

func devNum(s string) (int, error) {
	if s == "*" {
		return -1, nil
	}
	v, err := strconv.ParseUint(s, 10, 20)
	if err != nil {
		return 0, fmt.Errorf("%q is not a device number", clip(s))
	}
	return int(v), nil
}

// HeldByCgroup returns the indices of the whole GPUs whose device node the
// cgroup may open (none: the job holds no GPU). ok is false when the list
// allows every device, or every GPU of a vendor, which says nothing about
// the job's share.
func HeldByCgroup(devices []Device, allowed []CgroupDevice, all bool) (held []int, ok bool) {
	if all {
		return nil, false
	}
	for _, d := range devices {
		if d.Parent >= 0 || d.Minor < 0 {
			continue
		}
		major := MajorNVIDIA
		if d.Vendor == VendorAMD {
			major = MajorDRI
		}
		for _, a := range allowed {
			if a.Major == major && a.Minor == -1 {
				return nil, false // every GPU of the vendor: no attribution
			}
			if a.Major == major && a.Minor == d.Minor {
				held = append(held, d.Index)
				break
			}
		}
	}
	return held, true
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
