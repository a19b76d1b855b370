package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseTimeLimit parses a time limit as sbatch's --time takes it and as
// Slurm prints one: "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes", "days-hours:minutes:seconds", or
// "UNLIMITED"/"INFINITE"/"-1" (unlimited; so is any all-zero limit,
// "0" or "00:00:00", as for sbatch). It returns seconds, 0 when unlimited.
func ParseTimeLimit(v string) (int64, error) {
	s := strings.TrimSpace(v)
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE", "-1", "0":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty time limit")
	}
	bad := func() (int64, error) {
		return 0, fmt.Errorf("%q is not a time limit (minutes, [days-]hours:minutes:seconds, or UNLIMITED)", clip(v))
	}
	var days int64
	hasDays := false
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := field(d)
		if err != nil {
			return bad()
		}
		days, hasDays, s = n, true, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return bad()
	}
	nums := make([]int64, len(parts))
	for i, p := range parts {
		n, err := field(p)
		if err != nil {
			return bad()
		}
		nums[i] = n
	}
	var sec int64
	switch {
	case hasDays && len(nums) == 1: // days-hours
		sec = nums[0] * 3600
	case hasDays && len(nums) == 2: // days-hours:minutes
		sec = nums[0]*3600 + nums[1]*60
	case len(nums) == 3: // [days-]hours:minutes:seconds
		sec = nums[0]*3600 + nums[1]*60 + nums[2]
	case len(nums) == 2: // minutes:seconds
		sec = nums[0]*60 + nums[1]
	default: // minutes
		sec = nums[0] * 60
	}
	sec += days * 86400
	if sec <= 0 {
		return 0, nil // "00:00:00", "0-0": unlimited, as for sbatch
	}
	return sec, nil
}

// field is one number of a time limit: digits only, at most 8 of them
// (so no sum of fields overflows).
func field(s string) (int64, error) {
	if s == "" || len(s) > 8 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.ParseInt(s, 10, 64)
}
