// Command gen writes the hand-made fixture trees of agent/collector
// (testdata/cgroupv1-slurm-handmade, testdata/cgroupv2-slurm-kerneldoc,
// testdata/cgroupv2-slurm26-sluid): one Slurm job with 64 processes, in
// Slurm's cgroup v1 and v2 layouts (v2 with the job directory named
// job_<id>, as before Slurm 26.05 or with CgroupJobIdPaths=yes, and named
// by the job's SLUID, as Slurm 26.05 does by default), with the files in
// the formats the kernel documents, plus the matching /proc/<pid>/{stat,io}
// files and expected.json with the totals.
//
//	go run ./agent/collector/testdata/gen -out agent/collector/testdata
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

type proc struct {
	pid, ppid   int
	comm        string
	threads     int
	utime       int
	read, write uint64
}

type leaf struct {
	step, task string // task "" = processes directly in the step cgroup
	procs      []proc
}

// Expected is what a collector must report for the fixture.
type Expected struct {
	JobID         uint64 `json:"job_id"`
	UID           uint32 `json:"uid"`
	Host          string `json:"host"`
	SLUID         string `json:"sluid,omitempty"`
	CPUUsageNanos uint64 `json:"cpu_usage_nanos"`
	MemoryUsed    uint64 `json:"memory_used_bytes"`
	MemoryRSS     uint64 `json:"memory_rss_bytes"`
	MemoryPeak    uint64 `json:"memory_peak_bytes"`
	MemoryLimit   uint64 `json:"memory_limit_bytes"`
	MemoryShmem   uint64 `json:"memory_shmem_bytes"`
	MemoryMapped  uint64 `json:"memory_mapped_file_bytes"`
	// MemoryWorkingSet is memory_used_bytes − inactive_file.
	MemoryWorkingSet uint64 `json:"memory_working_set_bytes"`
	CPUs             uint32 `json:"cpus_allocated"`
	Processes        uint32 `json:"processes"`
	Threads          uint32 `json:"threads"`
	ProcReadBytes    uint64 `json:"proc_read_bytes"`
	ProcWriteBytes   uint64 `json:"proc_write_bytes"`
	IOStatRead       uint64 `json:"iostat_read_bytes,omitempty"`
	IOStatWrite      uint64 `json:"iostat_write_bytes,omitempty"`
	// The v2 trees' pressure totals (their files' microseconds × 1000),
	// memory.events oom_kill, and the largest step_*/user/pids.peak.
	CPUStallSome    uint64 `json:"cpu_stall_some_nanos,omitempty"`
	MemoryStallSome uint64 `json:"memory_stall_some_nanos,omitempty"`
	MemoryStallFull uint64 `json:"memory_stall_full_nanos,omitempty"`
	IOStallSome     uint64 `json:"io_stall_some_nanos,omitempty"`
	IOStallFull     uint64 `json:"io_stall_full_nanos,omitempty"`
	OOMKills        uint64 `json:"oom_kills,omitempty"`
	ThreadsPeak     uint32 `json:"threads_peak,omitempty"`
	PIDs            []int  `json:"pids"`
}

const (
	jobID    = 4242
	uid      = 1000
	host     = "node01"
	cpuList  = "0-7,16-23\n"
	memUsed  = 6442450944
	memRSS   = 5368709120
	memPeak  = 7516192768
	memLimit = 17179869184
	// memory.stat (total_)shmem, (total_)mapped_file / file_mapped and
	// (total_)inactive_file, as written in memStatV1 and memStatV2.
	memShmem        = 9084928
	memMapped       = 11108352
	memInactiveFile = 536870912
	cpuNanos        = 123456789000
	stepdBase       = 9000
	// sluid is the job's SLUID as Slurm 26.05 prints it (print_sluid):
	// cluster 0x2a5, submitted at 1780272000000 ms, sequence 0.
	// otherSLUID is the next job's (sequence 1), whose directory sits
	// beside it in the SLUID tree and must never be read for it.
	sluid      = "s2MNKT07NV0000"
	otherSLUID = "s2MNKT07NV0001"
	// The v2 job's pressure (PSI) totals in microseconds, as the files
	// write them, and its OOM kills (memory.events oom_kill).
	cpuSomeUsec, memSomeUsec, memFullUsec, ioSomeUsec, ioFullUsec = 2345678, 987654, 123456, 45678901, 3456789
	oomKills                                                      = 2
)

// pidsPeak is the pids.peak written for a step_*/user cgroup holding
// threads tasks now: a little above, as a high-water mark is.
func pidsPeak(threads int) int { return threads + threads/9 + 2 }

// pressure is a pressure file in the kernel's format (psi.rst), with a
// "full" line unless someOnly (cpu.pressure before Linux 5.13).
func pressure(someUsec, fullUsec uint64, someOnly bool) string {
	s := fmt.Sprintf("some avg10=1.25 avg60=0.73 avg300=0.20 total=%d\n", someUsec)
	if !someOnly {
		s += fmt.Sprintf("full avg10=0.40 avg60=0.11 avg300=0.03 total=%d\n", fullUsec)
	}
	return s
}

func main() {
	out := flag.String("out", "agent/collector/testdata", "testdata directory")
	flag.Parse()
	leaves := job()
	exp := Expected{JobID: jobID, UID: uid, Host: host, CPUUsageNanos: cpuNanos, MemoryUsed: memUsed,
		MemoryRSS: memRSS, MemoryPeak: memPeak, MemoryLimit: memLimit, CPUs: 16,
		MemoryShmem: memShmem, MemoryMapped: memMapped, MemoryWorkingSet: memUsed - memInactiveFile}
	for _, l := range leaves {
		for _, p := range l.procs {
			exp.Processes++
			exp.Threads += uint32(p.threads) // #nosec G115 -- fixture generator: 1 to 5 threads a process
			exp.ProcReadBytes += p.read
			exp.ProcWriteBytes += p.write
			exp.PIDs = append(exp.PIDs, p.pid)
		}
	}
	writeV1(filepath.Join(*out, "cgroupv1-slurm-handmade"), leaves, exp)
	exp.IOStatRead, exp.IOStatWrite = 3221225472+1048576, 1073741824+524288
	exp.CPUStallSome, exp.MemoryStallSome, exp.MemoryStallFull = cpuSomeUsec*1000, memSomeUsec*1000, memFullUsec*1000
	exp.IOStallSome, exp.IOStallFull, exp.OOMKills = ioSomeUsec*1000, ioFullUsec*1000, oomKills
	writeV2(filepath.Join(*out, "cgroupv2-slurm-kerneldoc"), fmt.Sprintf("job_%d", jobID), leaves, exp)
	exp.SLUID = sluid
	dir := filepath.Join(*out, "cgroupv2-slurm26-sluid")
	writeV2(dir, sluid, leaves, exp)
	writeOtherJob(filepath.Join(dir, "cgroup", "system.slice", "slurmstepd.scope", otherSLUID))
}

// job is the fixture job: an extern step with one sleep, a batch step with
// the script and srun, and step 0 with 15 tasks of 4 processes: 64 in all.
func job() []leaf {
	pid := 20000
	next := func(ppid int, comm string, threads int) proc {
		pid += 100 // leave room for thread ids
		n := pid / 100
		return proc{pid: pid, ppid: ppid, comm: comm, threads: threads, utime: n * 37 % 5000,
			read: uint64(n%7) * 1 << 20, write: uint64(n%5) * 1 << 18} // #nosec G115 -- n%7 and n%5 of a positive n
	}
	var ls []leaf
	ls = append(ls, leaf{step: "extern", procs: []proc{next(stepdBase, "sleep", 1)}})
	script := next(stepdBase+1, "slurm_script", 1)
	srun := next(script.pid, "srun", 5)
	ls = append(ls, leaf{step: "batch", task: "0", procs: []proc{script, srun, next(srun.pid, "srun", 1)}})
	for t := 0; t < 15; t++ {
		py := next(stepdBase+2, "python3", 8)
		ls = append(ls, leaf{step: "0", task: fmt.Sprint(t), procs: []proc{
			py, next(py.pid, "pt_data_worker", 2), next(py.pid, "(my) proc) x", 1), next(py.pid, "sh", 1)}})
	}
	return ls
}

func write(path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		log.Fatal(err)
	}
}

func pidList(ps []proc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%d\n", p.pid)
	}
	return b.String()
}

func tidList(ps []proc) string {
	var b strings.Builder
	for _, p := range ps {
		for i := 0; i < p.threads; i++ {
			fmt.Fprintf(&b, "%d\n", p.pid+i)
		}
	}
	return b.String()
}

// procStat is a /proc/<pid>/stat line in the kernel's format (proc(5)).
func procStat(p proc) string {
	// #nosec G115 -- fixture generator: 1 to 5 threads a process
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 %d 0 12 0 %d %d 0 0 20 0 %d 0 %d %d %d 18446744073709551615 94582887874560 94582887894441 140724643430640 0 0 0 0 16781312 134234626 0 0 0 17 %d 0 0 0 0 0 94582887910448 94582887912064 94583829258240 140724643433144 140724643433164 140724643433164 140724643434475 0\n",
		p.pid, p.comm, p.ppid, p.pid, p.pid, 1000+p.pid%97, p.utime, p.utime/9, p.threads, 170000+p.pid, 3133440*uint64(p.threads), 4130+p.pid%1000, p.pid%16)
}

func procIO(p proc) string {
	return fmt.Sprintf("rchar: %d\nwchar: %d\nsyscr: %d\nsyscw: %d\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: 0\n",
		p.read+8192, p.write+4096, p.pid%1000, p.pid%300, p.read, p.write)
}

func writeProc(dir string, ps []proc) {
	for _, p := range ps {
		d := filepath.Join(dir, "proc", fmt.Sprint(p.pid))
		write(filepath.Join(d, "stat"), procStat(p))
		write(filepath.Join(d, "io"), procIO(p))
	}
}

func writeExpected(dir string, exp Expected) {
	b, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	write(filepath.Join(dir, "expected.json"), string(b)+"\n")
}

const memStatV1 = `cache 1073741824
rss 0
rss_huge 0
shmem 0
mapped_file 0
dirty 0
writeback 0
swap 0
pgpgin 0
pgpgout 0
pgfault 0
pgmajfault 0
inactive_anon 0
active_anon 0
inactive_file 0
active_file 0
unevictable 0
hierarchical_memory_limit 17179869184
hierarchical_memsw_limit 9223372036854771712
total_cache 1073741824
total_rss 5368709120
total_rss_huge 2097152000
total_shmem 9084928
total_mapped_file 11108352
total_dirty 40960
total_writeback 0
total_swap 0
total_pgpgin 1933112
total_pgpgout 1712919
total_pgfault 2575420
total_pgmajfault 641
total_inactive_anon 2797568
total_active_anon 5365911552
total_inactive_file 536870912
total_active_file 536870912
total_unevictable 0
`

func writeV1(dir string, leaves []leaf, exp Expected) {
	if err := os.RemoveAll(dir); err != nil {
		log.Fatal(err)
	}
	jobRel := filepath.Join("slurm_"+host, fmt.Sprintf("uid_%d", uid), fmt.Sprintf("job_%d", jobID))
	for _, ctl := range []string{"memory", "cpuacct", "cpuset", "freezer"} {
		jd := filepath.Join(dir, "cgroup", ctl, jobRel)
		// The job-level cgroup lists no processes in Slurm's v1 layout.
		write(filepath.Join(jd, "cgroup.procs"), "")
		write(filepath.Join(jd, "tasks"), "")
		switch ctl {
		case "memory":
			write(filepath.Join(jd, "memory.usage_in_bytes"), fmt.Sprintf("%d\n", memUsed))
			write(filepath.Join(jd, "memory.max_usage_in_bytes"), fmt.Sprintf("%d\n", memPeak))
			write(filepath.Join(jd, "memory.limit_in_bytes"), fmt.Sprintf("%d\n", memLimit))
			write(filepath.Join(jd, "memory.stat"), memStatV1)
		case "cpuacct":
			write(filepath.Join(jd, "cpuacct.usage"), fmt.Sprintf("%d\n", cpuNanos))
		case "cpuset":
			write(filepath.Join(jd, "cpuset.cpus"), cpuList)
			write(filepath.Join(jd, "cpuset.effective_cpus"), cpuList)
			write(filepath.Join(jd, "cpuset.mems"), "0-1\n")
		}
		for _, l := range leaves {
			sd := filepath.Join(jd, "step_"+l.step)
			write(filepath.Join(sd, "cgroup.procs"), "")
			write(filepath.Join(sd, "tasks"), "")
			ld := sd
			if l.task != "" {
				ld = filepath.Join(sd, "task_"+l.task)
			}
			write(filepath.Join(ld, "cgroup.procs"), pidList(l.procs))
			write(filepath.Join(ld, "tasks"), tidList(l.procs))
			if ctl == "cpuacct" {
				write(filepath.Join(ld, "cpuacct.usage"), "1000000\n")
			}
		}
	}
	var all []proc
	for _, l := range leaves {
		all = append(all, l.procs...)
	}
	writeProc(dir, all)
	writeExpected(dir, exp)
}

const memStatV2 = `anon 5368709120
file 1073741824
kernel 52428800
kernel_stack 1048576
pagetables 10485760
sec_pagetables 0
percpu 1024
sock 0
vmalloc 0
shmem 9084928
zswap 0
zswapped 0
file_mapped 11108352
file_dirty 40960
file_writeback 0
swapcached 0
anon_thp 2097152000
file_thp 0
shmem_thp 0
inactive_anon 2797568
active_anon 5365911552
inactive_file 536870912
active_file 536870912
unevictable 0
slab_reclaimable 20971520
slab_unreclaimable 10485760
slab 31457280
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgscan_kswapd 0
pgscan_direct 0
pgsteal_kswapd 0
pgsteal_direct 0
pgfault 2575420
pgmajfault 641
pgrefill 0
pgactivate 0
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
zswpin 0
zswpout 0
thp_fault_alloc 1000
thp_collapse_alloc 0
`

// writeV2 writes the job under system.slice/slurmstepd.scope/<jobDir>:
// jobDir is job_<id> or the job's SLUID (Slurm 26.05's cgroup_p_step_create
// names it by the SLUID unless CgroupJobIdPaths=yes; the steps below it are
// the same either way).
func writeV2(dir, jobDir string, leaves []leaf, exp Expected) {
	if err := os.RemoveAll(dir); err != nil {
		log.Fatal(err)
	}
	scope := filepath.Join(dir, "cgroup", "system.slice", "slurmstepd.scope")
	write(filepath.Join(scope, "cgroup.procs"), "")
	jd := filepath.Join(scope, jobDir)
	write(filepath.Join(jd, "cgroup.procs"), "")
	write(filepath.Join(jd, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	write(filepath.Join(jd, "cgroup.subtree_control"), "cpuset cpu io memory pids\n")
	write(filepath.Join(jd, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\ncore_sched.force_idle_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
		cpuNanos/1000, cpuNanos/1000*9/10, cpuNanos/1000/10))
	write(filepath.Join(jd, "memory.current"), fmt.Sprintf("%d\n", memUsed))
	write(filepath.Join(jd, "memory.peak"), fmt.Sprintf("%d\n", memPeak))
	write(filepath.Join(jd, "memory.max"), fmt.Sprintf("%d\n", memLimit))
	write(filepath.Join(jd, "memory.swap.max"), "0\n")
	write(filepath.Join(jd, "memory.stat"), memStatV2)
	write(filepath.Join(jd, "cpuset.cpus"), cpuList)
	write(filepath.Join(jd, "cpuset.cpus.effective"), cpuList)
	write(filepath.Join(jd, "pids.current"), fmt.Sprintf("%d\n", exp.Threads+3*4))
	write(filepath.Join(jd, "pids.max"), "max\n")
	write(filepath.Join(jd, "io.stat"), "8:0 rbytes=3221225472 wbytes=1073741824 rios=786432 wios=262144 dbytes=0 dios=0\n259:0 rbytes=1048576 wbytes=524288 rios=256 wios=128 dbytes=0 dios=0\n")
	// cpu.pressure with its "full" line (Linux 5.13 on), which is not read.
	write(filepath.Join(jd, "cpu.pressure"), pressure(cpuSomeUsec, 1234, false))
	write(filepath.Join(jd, "memory.pressure"), pressure(memSomeUsec, memFullUsec, false))
	write(filepath.Join(jd, "io.pressure"), pressure(ioSomeUsec, ioFullUsec, false))
	write(filepath.Join(jd, "memory.events"), fmt.Sprintf("low 0\nhigh 0\nmax 17\noom 2\noom_kill %d\noom_group_kill 0\n", oomKills))

	var all []proc
	steps := map[string][]leaf{}
	var order []string
	for _, l := range leaves {
		if _, ok := steps[l.step]; !ok {
			order = append(order, l.step)
		}
		steps[l.step] = append(steps[l.step], l)
		all = append(all, l.procs...)
	}
	for i, step := range order {
		sd := filepath.Join(jd, "step_"+step)
		write(filepath.Join(sd, "cgroup.procs"), "")
		// slurmstepd sits in step_<x>/slurm: not one of the job's processes.
		stepd := proc{pid: stepdBase + i, ppid: 1, comm: "slurmstepd", threads: 4, read: 123456789, write: 987654321}
		all = append(all, stepd)
		write(filepath.Join(sd, "slurm", "cgroup.procs"), pidList([]proc{stepd}))
		write(filepath.Join(sd, "slurm", "pids.current"), "4\n")
		ud := filepath.Join(sd, "user")
		write(filepath.Join(ud, "cgroup.procs"), "")
		var threads int
		for _, l := range steps[step] {
			task := l.task
			if step == "extern" {
				task = "special"
			}
			td := filepath.Join(ud, "task_"+task)
			write(filepath.Join(td, "cgroup.procs"), pidList(l.procs))
			write(filepath.Join(td, "cgroup.threads"), tidList(l.procs))
			n := 0
			for _, p := range l.procs {
				n += p.threads
			}
			write(filepath.Join(td, "pids.current"), fmt.Sprintf("%d\n", n))
			threads += n
		}
		write(filepath.Join(ud, "pids.current"), fmt.Sprintf("%d\n", threads))
		write(filepath.Join(ud, "pids.peak"), fmt.Sprintf("%d\n", pidsPeak(threads)))
		exp.ThreadsPeak = max(exp.ThreadsPeak, uint32(pidsPeak(threads))) // #nosec G115 -- fixture generator: a few hundred threads
	}
	writeProc(dir, all)
	writeExpected(dir, exp)
}

// writeOtherJob writes another job's v2 directory (its counters only, far
// from the fixture job's), to show that the fixture job's is the one read.
func writeOtherJob(jd string) {
	write(filepath.Join(jd, "cgroup.procs"), "")
	write(filepath.Join(jd, "cpu.stat"), "usage_usec 1\nuser_usec 1\nsystem_usec 0\n")
	write(filepath.Join(jd, "memory.current"), "4096\n")
	write(filepath.Join(jd, "memory.peak"), "4096\n")
	write(filepath.Join(jd, "memory.max"), "max\n")
	write(filepath.Join(jd, "memory.stat"), strings.Replace(memStatV2, "anon 5368709120", "anon 4096", 1))
	write(filepath.Join(jd, "cpuset.cpus.effective"), "8\n")
	write(filepath.Join(jd, "step_extern", "cgroup.procs"), "")
	write(filepath.Join(jd, "step_extern", "user", "cgroup.procs"), "")
	write(filepath.Join(jd, "step_extern", "user", "task_special", "cgroup.procs"), "")
}
