package collector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Slurm's cgroup layouts, one regular expression per layout, matched
// against a path relative to a controller directory (v1) or to the cgroup
// root (v2).
var (
	// slurmV1Path is Slurm's cgroup/v1 layout, under each of the memory,
	// cpuacct, cpuset and freezer hierarchies (no blkio, no pids):
	//
	//	slurm[_<host>]/uid_<uid>/job_<jobid>[/step_<step>[/task_<n>]]
	//
	// "slurm_<host>" appears when several slurmd run on one host. The
	// job-level cgroup.procs lists no processes: they sit in the step_* and
	// task_* cgroups below it (the extern step's in step_extern itself).
	slurmV1Path = regexp.MustCompile(`^slurm(?:_([^/]+))?/uid_([0-9]+)/job_([0-9]+)(?:/step_([^/]+)(?:/task_([^/]+))?)?$`)

	// slurmV2Path is Slurm's cgroup/v2 layout under the unified root:
	//
	//	<slice>/[<host>_]slurmstepd.scope/<job>[/step_<step>[/user[/task_<n>]]]
	//	<slice>/[<host>_]slurmstepd.scope/<job>/step_<step>/slurm
	//
	// <job> is the job's SLUID ("sBX9M87FEJGA00", Slurm 26.05 on), or
	// job_<jobid> (Slurm before 26.05, or CgroupJobIdPaths=yes in
	// cgroup.conf). <slice> is normally system.slice (cgroup.conf's
	// CgroupSlice); "<host>_" prefixes the scope when several slurmd run on
	// one host. step_*/slurm holds slurmstepd itself, which is not one of
	// the job's processes; the job's processes are in step_*/user/task_*
	// (task_special for the extern step).
	slurmV2Path = regexp.MustCompile(`^((?:[^/]+/)*)(?:([^/]+)_)?slurmstepd\.scope/(?:job_([0-9]+)|(` + sluidPattern + `))(?:/step_([^/]+)(?:/(user|slurm)(?:/task_([^/]+))?)?)?$`)

	// sluidRE is a whole SLUID as Slurm prints it.
	sluidRE = regexp.MustCompile(`^` + sluidPattern + `$`)
)

// sluidPattern is a SLUID as Slurm 26.05 prints it (print_sluid in its
// src/common/sluid.c): a lowercase "s" and the 64-bit id in 13 characters
// of Crockford's base32 alphabet (upper case; no I, L, O, U), most
// significant first. 13 × 5 bits hold 65, so the first character carries
// only the top 4 bits: 0-9 or A-F.
const sluidPattern = `s[0-9A-F][0-9A-HJKMNP-TV-Z]{12}`

// ValidSLUID reports whether s is a SLUID exactly as Slurm prints it (and
// names job directories with): "s" and 13 characters of Crockford's base32
// alphabet. Anything else (another length, a lowercase or excluded letter,
// a path separator) is not a SLUID and must never be joined into a path.
func ValidSLUID(s string) bool { return sluidRE.MatchString(s) }

// SlurmPath is what a Slurm cgroup path says about the job it belongs to.
type SlurmPath struct {
	Host  string // the slurmd's node name, when the path names one
	UID   uint32 // job owner (v1 paths only)
	JobID uint64 // 0 when the v2 job directory is named by SLUID
	SLUID string // the v2 job directory's SLUID ("sBX9M87FEJGA00"); empty for job_<id>
	Step  string // "batch", "extern", "0", ...; empty for the job cgroup
	Task  string // "0", "special", ...; empty above task level
	Stepd bool   // a v2 step_*/slurm cgroup holding slurmstepd, not job processes
}

// ParseSlurmPath matches rel, a path relative to a v1 controller directory
// or to the v2 root, against Slurm's layout for version v (hybrid hosts
// use the v1 layout). ok is false when rel is not a Slurm job cgroup.
func ParseSlurmPath(v Version, rel string) (p SlurmPath, ok bool) {
	rel = strings.Trim(filepath.ToSlash(rel), "/")
	switch v {
	case VersionV1, VersionHybrid:
		m := slurmV1Path.FindStringSubmatch(rel)
		if m == nil {
			return p, false
		}
		uid, err1 := strconv.ParseUint(m[2], 10, 32)
		job, err2 := strconv.ParseUint(m[3], 10, 64)
		if err1 != nil || err2 != nil {
			return p, false
		}
		return SlurmPath{Host: m[1], UID: uint32(uid), JobID: job, Step: m[4], Task: m[5]}, true
	case VersionV2:
		m := slurmV2Path.FindStringSubmatch(rel)
		if m == nil {
			return p, false
		}
		p = SlurmPath{Host: m[2], SLUID: m[4], Step: m[5], Task: m[7], Stepd: m[6] == "slurm"}
		if m[3] != "" {
			job, err := strconv.ParseUint(m[3], 10, 64)
			if err != nil {
				return SlurmPath{}, false
			}
			p.JobID = job
		}
		return p, true
	}
	return p, false
}

// JobDirs are the cgroup directories of one job on this node. For v1 and
// hybrid hosts each controller has its own (empty when that hierarchy has
// no cgroup for the job); for v2 Unified is the one job directory.
type JobDirs struct {
	Version Version
	Unified string // v2: <root>/<slice>/[<host>_]slurmstepd.scope/{<sluid>|job_<id>}
	Memory  string // v1: <root>/memory/slurm[_<host>]/uid_<uid>/job_<id>
	CPUAcct string // v1: the same under cpuacct (or cpu,cpuacct)
	CPUSet  string // v1: the same under cpuset
	Devices string // v1: the same under devices (only with ConstrainDevices=yes)
}

// procsDir is the v1 hierarchy whose step and task cgroups list the job's
// processes: the first of memory, cpuacct, cpuset that exists.
func (d JobDirs) procsDir() string {
	switch {
	case d.Memory != "":
		return d.Memory
	case d.CPUAcct != "":
		return d.CPUAcct
	}
	return d.CPUSet
}

// FindJobDirs finds the cgroup directories of job (its JobID, UID, SLUID
// and Host) under root for layout v (which must not be VersionAuto).
// job.Host, when not empty, picks the slurmd's node name on hosts running
// several slurmd. On v2 the job's directory is looked for by job.SLUID
// first (Slurm 26.05's naming), then as job_<id> (older Slurm, or
// CgroupJobIdPaths=yes); v1 ignores the SLUID. A job with no cgroup gives
// an error wrapping os.ErrNotExist; job.SLUID must be empty or valid
// (ValidSLUID).
func FindJobDirs(root string, v Version, job Target) (JobDirs, error) {
	switch v {
	case VersionV1, VersionHybrid:
		return findV1(root, v, job.UID, job.JobID, job.Host)
	case VersionV2:
		return findV2(root, job.JobID, job.SLUID, job.Host)
	}
	return JobDirs{}, fmt.Errorf("finding cgroup of job %d: cgroup version %s must be resolved first", job.JobID, v)
}
func findV1(root string, v Version, uid uint32, jobID uint64, host string) (JobDirs, error) {
	d := JobDirs{Version: v}
	tail := filepath.Join("uid_"+strconv.FormatUint(uint64(uid), 10), "job_"+strconv.FormatUint(jobID, 10))
	find := func(controllers ...string) string {
		for _, c := range controllers {
			base := filepath.Join(root, c)
			var tops []string
			if host != "" {
				tops = append(tops, "slurm_"+host)
			}
			tops = append(tops, "slurm")
			if host == "" {
				matches, _ := filepath.Glob(filepath.Join(base, "slurm_*"))
				for _, m := range matches {
					tops = append(tops, filepath.Base(m))
				}
			}
			for _, top := range tops {
				dir := filepath.Join(base, top, tail)
				if isDir(dir) {
					return dir
				}
			}
		}
		return ""
	}
	d.Memory = find("memory")
	d.CPUAcct = find("cpuacct", "cpu,cpuacct", "cpuacct,cpu")
	d.CPUSet = find("cpuset")
	d.Devices = find("devices")
	if d.Memory == "" && d.CPUAcct == "" {
		return d, fmt.Errorf("finding cgroup v1 of job %d (uid %d) under %s/{memory,cpuacct}/slurm*/%s: %w",
			jobID, uid, root, tail, os.ErrNotExist)
	}
	return d, nil
}

// findV2 looks for the job's directory under every slurmstepd scope: by
// its SLUID when known, then as job_<id>. Without a SLUID nothing named by
// one is ever taken for the job (another job's directory could be); when
// the job is not found and the scopes hold SLUID-named directories, the
// error says the SLUID is needed.
func findV2(root string, jobID uint64, sluid, host string) (JobDirs, error) {
	if sluid != "" && !ValidSLUID(sluid) {
		return JobDirs{}, fmt.Errorf("finding cgroup v2 of job %d: %q is not a SLUID (s and 13 characters of Crockford's base32)", jobID, sluid)
	}
	var names []string
	if sluid != "" {
		names = append(names, sluid)
	}
	names = append(names, "job_"+strconv.FormatUint(jobID, 10))
	for _, name := range names {
		match := findV2Named(root, name, host, func(p SlurmPath) bool {
			if name == sluid {
				return p.SLUID == sluid
			}
			return p.SLUID == "" && p.JobID == jobID
		})
		switch {
		case len(match) == 0:
			continue
		case len(match) > 1 && (host == "" || filepath.Base(filepath.Dir(match[0])) != host+"_slurmstepd.scope"):
			return JobDirs{}, fmt.Errorf("finding cgroup v2 of job %d: several candidates %v: %w (set the node name)", jobID, match, errAmbiguous)
		}
		return JobDirs{Version: VersionV2, Unified: match[0]}, nil
	}
	where := fmt.Sprintf("%s/*.slice/*slurmstepd.scope/{%s}", root, strings.Join(names, ","))
	if sluid == "" {
		if scope := sluidScope(root); scope != "" {
			return JobDirs{}, fmt.Errorf("finding cgroup v2 of job %d: no %s, and %s names its job directories by SLUID "+
				"(Slurm 26.05 without CgroupJobIdPaths=yes): the job's SLUID is needed (SLURM_JOB_SLUID from the SPANK plugin, or squeue's step_id.sluid): %w",
				jobID, where, scope, os.ErrNotExist)
		}
	}
	return JobDirs{}, fmt.Errorf("finding cgroup v2 of job %d under %s: %w", jobID, where, os.ErrNotExist)
}

// v2Scopes are where slurmstepd scopes are looked for, relative to the
// cgroup root: <slice>/ and one level of nested slices.
var v2Scopes = []string{"*/*slurmstepd.scope", "*/*/*slurmstepd.scope"}

// findV2Named returns the job directories called name under the
// slurmstepd scopes that are Slurm job paths for which is says yes, the
// scope of host first.
func findV2Named(root, name, host string, is func(SlurmPath) bool) []string {
	var found []string
	seen := map[string]bool{}
	add := func(dir string) {
		if !seen[dir] && isDir(dir) {
			seen[dir] = true
			found = append(found, dir)
		}
	}
	if host != "" {
		add(filepath.Join(root, "system.slice", host+"_slurmstepd.scope", name))
	}
	add(filepath.Join(root, "system.slice", "slurmstepd.scope", name))
	for _, pat := range v2Scopes {
		matches, _ := filepath.Glob(filepath.Join(root, pat, name))
		for _, m := range matches {
			add(m)
		}
	}
	var match []string
	for _, dir := range found {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			continue
		}
		p, ok := ParseSlurmPath(VersionV2, rel)
		if !ok || !is(p) {
			continue
		}
		if host != "" && p.Host != "" && p.Host != host {
			continue
		}
		match = append(match, dir)
	}
	return match
}

// sluidScope returns a slurmstepd scope under root that holds a directory
// named by SLUID (Slurm 26.05's naming), or "". Only the names are looked
// at, to say why a job without a known SLUID is not found.
func sluidScope(root string) string {
	for _, pat := range v2Scopes {
		scopes, _ := filepath.Glob(filepath.Join(root, pat))
		for _, scope := range scopes {
			entries, err := os.ReadDir(scope)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if e.IsDir() && ValidSLUID(e.Name()) {
					return scope
				}
			}
		}
	}
	return ""
}

// errAmbiguous says several slurmstepd scopes hold a job of that id.
var errAmbiguous = errors.New("ambiguous job cgroup")

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
