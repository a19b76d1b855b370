package cgroupv2

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// EnvPackagesDir names a directory of built packages (make packages) for
// the guest; without it the test builds them.
const EnvPackagesDir = "JOBSIGHT_PACKAGES_DIR"

// EnvKeep, set to 1, keeps the share (logs, console, figures) after the
// test, and says where it is.
const EnvKeep = "JOBSIGHT_V2NODE_KEEP"

const cluster = "v2test"

// The tolerances every figure is held to (agent/collector/README.md
// repeats them). The kernel's figures are read by the job itself at its
// end, after its workload and one second of sleep; the agent's last sample
// of the job comes at most one interval (1 s) before its cgroup is
// removed, so both see the whole workload. What runs in the job's cgroup
// after the job's own reading is in the document but not in the reading:
// slurmstepd's end of the job (it lives in the job's cgroup, step_*/slurm),
// up to about a second of CPU and of CPU wait under emulation, more on a
// loaded host, tens of milliseconds on a real node. That much is allowed
// above, bounded by time itself (after): no more CPU than the job's CPUs
// give between its reading and the agent's last sample (sampling.last),
// and no more stall than that time.
const (
	cpuTolSeconds  = 0.5  // core-seconds, or
	cpuTolShare    = 0.05 // of the kernel's figure, whichever is larger
	afterTol       = 1.5  // seconds of CPU after the job's reading, for the figures checked against the workload
	memTolBytes    = 4 << 20
	memTolShare    = 0.03
	ioTolBytes     = 1 << 20
	ioTolShare     = 0.05
	stallTolSecond = 0.5
	stallTolShare  = 0.10
)

// TestCgroupV2Node runs the jobs of issue #32 on the cgroup v2 node and
// checks every per-job figure against the kernel's own account of the same
// job and against what the job did.
func TestCgroupV2Node(t *testing.T) {
	stack.Require(t, "root", "qemu-system-x86_64", "mke2fs", "mmdebstrap", "prometheus")
	if _, err := os.Stat("/boot"); err != nil {
		stack.Unavailable(t, "no /boot: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	share, err := os.MkdirTemp("", "jobsight-v2node-")
	if err != nil {
		t.Fatal(err)
	}
	keep := os.Getenv(EnvKeep) == "1"
	t.Cleanup(func() {
		if keep || t.Failed() {
			t.Logf("the guest's share (logs, console, figures): %s", share)
			return
		}
		_ = os.RemoveAll(share)
	})
	t0 := time.Now()
	node, err := Boot(ctx, share, Options{Packages: os.Getenv(EnvPackagesDir), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()
	waitCtx, waitCancel := context.WithTimeout(ctx, 25*time.Minute)
	defer waitCancel()
	if err := node.WaitJobs(waitCtx); err != nil {
		t.Fatalf("%v\n--- the guest's log:\n%s", err, node.tail("guest.log", 6000))
	}
	t.Logf("the guest ran its jobs in %.0f s (boot included)", time.Since(t0).Seconds())

	manifest, err := node.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	figs, err := node.ReadFigures()
	if err != nil {
		t.Fatal(err)
	}
	docs := node.jobDocs(t, ctx)
	left, _ := os.ReadFile(filepath.Join(share, "out", "left-cgroups"))

	// doc returns the final job document of the job named name (and the
	// kernel's figures of that job).
	doc := func(t *testing.T, name string) (jobDoc, Figures) {
		t.Helper()
		id := manifest[name]
		if id == "" {
			t.Fatalf("job %s was not submitted (manifest %v)", name, manifest)
		}
		d, ok := docs[cluster+":"+id]
		if !ok {
			t.Fatalf("no job document %s:%s for %s (documents: %v)", cluster, id, name, slices.Sorted(maps.Keys(docs)))
		}
		f, ok := figs[id]
		if !ok {
			t.Fatalf("job %s (%s) copied out no kernel figures", name, id)
		}
		if !d.bool("final") {
			t.Errorf("%s: the job document is not final", name)
		}
		return d, f
	}
	sluid := regexp.MustCompile(`^s[0-9A-F][0-9A-HJKMNP-TV-Z]{12}$`)

	for _, name := range []string{"cpu", "idle", "alloc", "write", "many", "cpustall", "iostall", "memstall", "oom", "restart", "jobidpath"} {
		t.Run(name+"/kernel", func(t *testing.T) {
			d, f := doc(t, name)
			checkAgainstKernel(t, name, d, f)
			// Named as 26.05 names it by default: by the SLUID, which
			// the document carries; CgroupJobIdPaths=yes: job_<id>.
			dir := strings.TrimSpace(f.Files["job_dir"])
			if name == "jobidpath" {
				if dir != "job_"+manifest[name] {
					t.Errorf("with CgroupJobIdPaths=yes the job's cgroup is %q, want job_%s", dir, manifest[name])
				}
			} else if !sluid.MatchString(dir) || dir != d.str("sluid") {
				t.Errorf("the job's cgroup directory is %q, the document's sluid %q: want the same SLUID", dir, d.str("sluid"))
			}
			// cgroup.conf's EnableExtraControllers=io,pids gives the jobs'
			// cgroups io.stat and pids.* (Slurm enables cpuset, cpu and
			// memory only otherwise). It stays on in the scope once set:
			// the jobs of phase 3, after cgroup.conf dropped it, have them
			// too.
			for _, file := range []string{"io.stat", "pids.peak"} {
				if strings.HasPrefix(f.Files[file], "error:") {
					t.Errorf("%s: no %s in the job's cgroup: %s", name, file, f.Files[file])
				}
			}
			// The figures outlive the cgroup: Slurm removed it at the end.
			if dir != "" && bytes.Contains(left, []byte(dir)) {
				t.Errorf("the job's cgroup %s was left behind after the job: %s", dir, left)
			}
		})
	}

	t.Run("what the jobs did", func(t *testing.T) {
		d, _ := doc(t, "cpu")
		busy := d.num("cpu.core_seconds")
		if busy < 0.6*12 || busy > 12*1.1+afterTol {
			t.Errorf("cpu: busy-looped one thread for 12 s, core_seconds %.2f", busy)
		}
		// Sleeping, the job used only what starting and ending it cost
		// (slurmstepd, the shell): seconds under emulation.
		d, _ = doc(t, "idle")
		if cs := d.num("cpu.core_seconds"); !(cs < 0.35*busy) {
			t.Errorf("idle: slept 15 s, core_seconds %.2f (the busy job's %.2f)", cs, busy)
		}
		d, _ = doc(t, "alloc")
		if p := d.num("memory.peak_bytes"); p < 300<<20 {
			t.Errorf("alloc: touched 300 MiB, memory.peak_bytes %.1f MiB", p/(1<<20))
		}
		if p := d.num("memory.rss_peak_bytes"); p < 290<<20 || p > 340<<20 {
			t.Errorf("alloc: touched 300 MiB of anonymous memory, rss_peak_bytes %.1f MiB", p/(1<<20))
		}
		d, _ = doc(t, "write")
		if w := d.num("io.written_bytes"); w < 64<<20 || w > 80<<20 {
			t.Errorf("write: wrote and fsynced 64 MiB, io.written_bytes %.1f MiB", w/(1<<20))
		}
		d, _ = doc(t, "jobidpath")
		if w := d.num("io.written_bytes"); w < 32<<20 {
			t.Errorf("jobidpath: wrote 32 MiB without the io controller, io.written_bytes %.1f MiB", w/(1<<20))
		}
		d, _ = doc(t, "many")
		if p := d.num("processes.peak"); p < 41 || p > 48 {
			t.Errorf("many: a shell, v2work and 40 children, processes.peak %v", p)
		}
		d, _ = doc(t, "oom")
		if s := d.str("state"); s != "OUT_OF_MEMORY" {
			t.Errorf("oom: state %q, want OUT_OF_MEMORY", s)
		}
		if p := d.num("memory.peak_bytes"); p < 150<<20 {
			t.Errorf("oom: killed at its 160 MiB limit, memory.peak_bytes %.1f MiB", p/(1<<20))
		}
	})

	t.Run("job array", func(t *testing.T) {
		arrayID := manifest["array"]
		for task := 1; task <= 3; task++ {
			id := fmt.Sprintf("%s:%s_%d", cluster, arrayID, task)
			d, ok := docs[id]
			if !ok {
				t.Errorf("no document %s for array task %d (documents: %v)", id, task, slices.Sorted(maps.Keys(docs)))
				continue
			}
			if int(d.num("array_task_id")) != task || strconv.Itoa(int(d.num("array_job_id"))) != arrayID {
				t.Errorf("%s: array_job_id %v array_task_id %v", id, d.num("array_job_id"), d.num("array_task_id"))
			}
			f, ok := figs[strconv.Itoa(int(d.num("slurm_job_id")))]
			if !ok {
				t.Errorf("%s: no kernel figures for Slurm job %v", id, d.num("slurm_job_id"))
				continue
			}
			checkAgainstKernel(t, fmt.Sprintf("array task %d", task), d, f)
		}
	})

	t.Run("pressure stalls", func(t *testing.T) {
		for _, c := range []struct {
			job, resource, kind, cause string
			min                        float64 // the least share of the run stalled
		}{
			{"cpustall", "cpu", "some", "cpu_stall", 0.4},        // four busy threads in one CPU
			{"iostall", "io", "some", "io_stall", 0.3},           // fsync after fsync on a throttled disk
			{"memstall", "memory", "some", "memory_stall", 0.05}, // a file twice its limit, read again and again
		} {
			d, f := doc(t, c.job)
			k, ok := f.StallMicros(c.resource+".pressure", c.kind)
			if !ok {
				t.Errorf("%s: the kernel's %s.pressure has no %s total: %q", c.job, c.resource, c.kind, f.Files[c.resource+".pressure"])
				continue
			}
			ratio := d.num("pressure." + c.resource + "_" + c.kind + "_ratio")
			if ratio < c.min {
				t.Errorf("%s: pressure.%s_%s_ratio %.3f, want at least %.2f (the kernel counted %.1f s)", c.job, c.resource, c.kind, ratio, c.min, float64(k)/1e6)
			}
			if c.min > 0 && !d.hasCause(c.cause) {
				t.Errorf("%s: stalled %.0f%% of its run on %s, but the analysis names no %s cause: %v", c.job, ratio*100, c.resource, c.cause, d.causes())
			}
		}
		d, _ := doc(t, "cpu")
		if r := d.num("pressure.io_some_ratio"); r > 0.2 {
			t.Errorf("cpu: a CPU-bound job stalled on I/O %.0f%% of its run", r*100)
		}
		if d.hasCause("io_stall") || d.hasCause("memory_stall") {
			t.Errorf("cpu: a CPU-bound job got stall causes: %v", d.causes())
		}
		for _, name := range []string{"idle", "alloc", "write"} {
			if d, _ := doc(t, name); d.hasCause("io_stall") || d.hasCause("memory_stall") || d.hasCause("cpu_stall") {
				t.Errorf("%s: stall causes %v (cpu %.2f, memory %.2f, io %.2f of its run)", name, d.causes(),
					d.num("pressure.cpu_some_ratio"), d.num("pressure.memory_some_ratio"), d.num("pressure.io_some_ratio"))
			}
		}
	})

	// cpuSeries checks the job's CPU series (labelled job_id=id) against
	// the kernel's cpu.stat usage_usec, and reports whether it exists.
	cpuSeries := func(t *testing.T, name, id string, d jobDoc, f Figures) bool {
		t.Helper()
		sel := fmt.Sprintf(`{cluster=%q,job_id=%q}`, cluster, id)
		cpu, ok, err := stack.PromQuery(ctx, node.PromURL, "max(max_over_time(jobsight_job_cpu_usage_seconds_total"+sel+"[2h]))")
		if err != nil || !ok {
			t.Errorf("%s: no CPU series (%v)", name, err)
			return false
		}
		usage, _ := f.Key("cpu.stat", "usage_usec")
		cpuAfter, _ := after(t, name, d, f)
		withinAfter(t, name+": the CPU series' last value against cpu.stat usage_usec", cpu, float64(usage)/1e6, cpuTolSeconds, cpuTolShare, cpuAfter)
		return true
	}

	t.Run("series", func(t *testing.T) {
		for _, name := range []string{"cpu", "alloc", "write"} {
			d, f := doc(t, name)
			id := d.str("job_id")
			if !cpuSeries(t, name, id, d, f) {
				continue
			}
			sel := fmt.Sprintf(`{cluster=%q,job_id=%q}`, cluster, id)
			mem, ok, err := stack.PromQuery(ctx, node.PromURL, "max(max_over_time(jobsight_job_memory_used_bytes"+sel+"[2h]))")
			peak, _ := f.Uint("memory.peak")
			if err != nil || !ok || mem > float64(peak) {
				t.Errorf("%s: the memory series' largest value %.0f above the kernel's memory.peak %d (%v)", name, mem, peak, err)
			}
			if name == "alloc" && mem < 290<<20 {
				t.Errorf("alloc: the memory series never showed the 300 MiB held for 6 s: %.1f MiB", mem/(1<<20))
			}
		}
		d, f := doc(t, "iostall")
		sel := fmt.Sprintf(`{cluster=%q,job_id=%q}`, cluster, d.str("job_id"))
		v, ok, err := stack.PromQuery(ctx, node.PromURL, "max(max_over_time(jobsight_job_io_pressure_stalled_seconds_total"+sel+"[2h]))")
		k, _ := f.StallMicros("io.pressure", "some")
		if err != nil || !ok {
			t.Errorf("iostall: no I/O stall series (%v)", err)
		} else {
			_, stallAfter := after(t, "iostall", d, f)
			withinAfter(t, "iostall: the I/O stall series' last value against io.pressure's some total", v, float64(k)/1e6, stallTolSecond, stallTolShare, stallAfter)
		}
	})

	t.Run("job page", func(t *testing.T) {
		d, f := doc(t, "alloc")
		page := node.jobPage(t, d.str("doc_id"))
		for _, want := range []string{"Job " + d.str("job_id") + " on " + cluster, "alice"} {
			if !strings.Contains(page, want) {
				t.Errorf("the job page lacks %q", want)
			}
		}
		peak, _ := f.Uint("memory.peak")
		if want := fmt.Sprintf("%.1f MiB", float64(peak)/(1<<20)); !strings.Contains(page, want) && !strings.Contains(page, fmt.Sprintf("%.1f MiB", d.num("memory.peak_bytes")/(1<<20))) {
			t.Errorf("the job page does not show the memory peak %s", want)
		}
		d, _ = doc(t, "iostall")
		page = node.jobPage(t, d.str("doc_id"))
		if !strings.Contains(strings.ToLower(page), "stall") {
			t.Errorf("the I/O-stalled job's page says nothing of its stalls")
		}
	})

	t.Run("slurmd restart under the node agent", func(t *testing.T) {
		// The agent moved out of slurmd.service into its own scope, so
		// systemd could restart slurmd (the guest's script fails
		// otherwise), and the job running meanwhile is whole.
		b, err := os.ReadFile(filepath.Join(share, "out", "agent-cgroups"))
		if err != nil || !strings.Contains(string(b), "/system.slice/jobsight-agent-v2node.scope") || strings.Contains(string(b), "slurmd.service") {
			t.Errorf("the node agent's cgroup while a job ran: %q (%v), want /system.slice/jobsight-agent-v2node.scope", b, err)
		}
		d, _ := doc(t, "restart")
		if cs := d.num("cpu.core_seconds"); !(cs >= 0.7*20) {
			t.Errorf("restart: busy-looped 20 s across the slurmd restart, core_seconds %v", cs)
		}
	})

	t.Run("Slurm too busy to answer", func(t *testing.T) {
		// Phase 4: every lookup of array task 7's identity was killed at
		// the agent's slurm.timeout until the job had ended. It was
		// sampled meanwhile; once Slurm answered, its documents and its
		// series went out under <array>_7, never under Slurm's plain id.
		arrayID := manifest["busyslurm"]
		if arrayID == "" {
			t.Fatalf("job busyslurm was not submitted (manifest %v)", manifest)
		}
		id := arrayID + "_7"
		d, ok := docs[cluster+":"+id]
		if !ok {
			t.Fatalf("no job document %s:%s (documents: %v)", cluster, id, slices.Sorted(maps.Keys(docs)))
		}
		if _, plain := docs[cluster+":"+arrayID]; plain {
			t.Errorf("a job document under Slurm's plain id %s:%s: the agent named the job before Slurm did", cluster, arrayID)
		}
		if !d.bool("final") || int(d.num("array_task_id")) != 7 || slices.Contains(d.strs("missing_metrics"), "slurm_metadata") {
			t.Errorf("%s: final %v, array_task_id %v, missing %v: want Slurm's metadata, got late", id, d.bool("final"), d.num("array_task_id"), d.strs("missing_metrics"))
		}
		f, ok := figs[strconv.Itoa(int(d.num("slurm_job_id")))]
		if !ok {
			t.Fatalf("%s: no kernel figures for Slurm job %v", id, d.num("slurm_job_id"))
		}
		checkAgainstKernel(t, "busyslurm", d, f)
		cpuSeries(t, id, id, d, f) // the points sampled before Slurm answered were sent
		sel := fmt.Sprintf(`{cluster=%q,job_id=%q}`, cluster, id)
		n, ok, err := stack.PromQuery(ctx, node.PromURL, "sum(count_over_time(jobsight_job_cpu_usage_seconds_total"+sel+"[2h]))")
		if err != nil || !ok || n < 0.5*d.num("sampling.count") {
			t.Errorf("%s: %v points in the CPU series of %v samples (%v)", id, n, d.num("sampling.count"), err)
		}
		if _, ok, _ := stack.PromQuery(ctx, node.PromURL, fmt.Sprintf(`count(count_over_time({cluster=%q,job_id=%q}[2h]))`, cluster, arrayID)); ok {
			t.Errorf("series labelled with Slurm's plain id %s", arrayID)
		}
		// The path this phase is for was taken: the watch ended before
		// Slurm answered (not a lookup that got through in time).
		log, _ := os.ReadFile(filepath.Join(share, "out", "agent.log"))
		late := regexp.MustCompile(`watch ended before Slurm answered.* job_id=` + strconv.Itoa(int(d.num("slurm_job_id"))) + `\b`)
		if !late.Match(log) {
			t.Errorf("the agent's log does not say that job %v's watch ended before Slurm answered: the phase did not test that", d.num("slurm_job_id"))
		}
	})

	t.Run("store outage", func(t *testing.T) {
		// ZincSearch was stopped for 20 s while phase 1's jobs ran: every
		// one of their documents came later from the agent's spool.
		for _, name := range []string{"cpu", "idle", "alloc", "write", "many"} {
			d, _ := doc(t, name)
			if d.num("sampling.count") < 3 {
				t.Errorf("%s: %v samples", name, d.num("sampling.count"))
			}
		}
	})
}

// checkAgainstKernel compares a job document with the kernel's account of
// the same job (one node).
func checkAgainstKernel(t *testing.T, name string, d jobDoc, f Figures) {
	t.Helper()
	cpuAfter, stallAfter := after(t, name, d, f)
	if usage, ok := f.Key("cpu.stat", "usage_usec"); !ok {
		t.Errorf("%s: the kernel's cpu.stat has no usage_usec: %q", name, f.Files["cpu.stat"])
	} else {
		withinAfter(t, name+": cpu.core_seconds against cpu.stat usage_usec", d.num("cpu.core_seconds"), float64(usage)/1e6, cpuTolSeconds, cpuTolShare, cpuAfter)
	}
	if peak, ok := f.Uint("memory.peak"); !ok {
		t.Errorf("%s: no memory.peak from the kernel: %q", name, f.Files["memory.peak"])
	} else if d.str("state") != "OUT_OF_MEMORY" {
		within(t, name+": memory.peak_bytes against memory.peak", d.num("memory.peak_bytes"), float64(peak), memTolBytes, memTolShare)
	} else if p := d.num("memory.peak_bytes"); p > float64(peak)+memTolBytes {
		// Killed for memory: the document's peak may be the limit
		// (memory.peak_from_limit), never more than the kernel's mark.
		t.Errorf("%s: memory.peak_bytes %.0f above the kernel's memory.peak %d", name, p, peak)
	}
	oom, _ := f.Key("memory.events", "oom_kill")
	if got := d.num("memory.oom_kills"); got != float64(oom) {
		t.Errorf("%s: memory.oom_kills %v, the kernel's memory.events oom_kill %d", name, got, oom)
	}
	if _, w, ok := f.IOBytes(); ok {
		within(t, name+": io.written_bytes against io.stat wbytes", d.num("io.written_bytes"), float64(w), ioTolBytes, ioTolShare)
	}
	if pp, ok := f.Uint("pids.peak"); ok {
		// pids.peak counts every task of the job's cgroup, slurmstepd's
		// threads too; the document counts the job's own (step_*/user).
		if tp := d.num("threads.peak"); tp < 1 || tp > float64(pp) {
			t.Errorf("%s: threads.peak %v, the kernel's pids.peak %d (which also counts slurmstepd's)", name, tp, pp)
		}
	}
	for _, res := range []string{"cpu", "memory", "io"} {
		k, ok := f.StallMicros(res+".pressure", "some")
		if !ok {
			continue
		}
		withinAfter(t, fmt.Sprintf("%s: pressure.%s_some_seconds against %s.pressure some total", name, res, res),
			d.num("pressure."+res+"_some_seconds"), float64(k)/1e6, stallTolSecond, stallTolShare, stallAfter)
	}
}

// after bounds what the job's cgroup can have done after the job read its
// figures: from that reading to the agent's last sample of the job
// (sampling.last), at most that long on each of the job's CPUs, and that
// long stalled (0.2 s more: the reading's own time, clock steps).
func after(t *testing.T, name string, d jobDoc, f Figures) (cpuSeconds, stallSeconds float64) {
	t.Helper()
	read, ok := f.ReadAt()
	last, err := time.Parse(time.RFC3339Nano, d.str("sampling.last"))
	cpus := f.CPUs()
	if !ok || err != nil || cpus == 0 {
		t.Errorf("%s: no time between the job's reading and the agent's last sample (time_ms %q, sampling.last %q, cpuset %q)",
			name, f.Files["time_ms"], d.str("sampling.last"), f.Files["cpuset.cpus.effective"])
		return 0, 0
	}
	w := max(0, last.Sub(read).Seconds()) + 0.2
	return w * float64(cpus), w
}

// within fails unless got is within tolAbs or tolShare × want of want.
func within(t *testing.T, what string, got, want, tolAbs, tolShare float64) {
	t.Helper()
	withinAfter(t, what, got, want, tolAbs, tolShare, 0)
}

// withinAfter is within, with after more allowed above want: what the
// job's cgroup did after the job read the kernel's figure.
func withinAfter(t *testing.T, what string, got, want, tolAbs, tolShare, after float64) {
	t.Helper()
	if math.IsNaN(got) {
		t.Errorf("%s: absent from the document (the kernel's figure: %.6g)", what, want)
		return
	}
	tol := math.Max(tolAbs, tolShare*want)
	if got < want-tol || got > want+tol+after {
		t.Errorf("%s: %.6g, the kernel's %.6g (tolerance -%.3g/+%.3g)", what, got, want, tol, tol+after)
	}
}

// jobDoc is a job document as stored, read generically: the test checks
// the stored fields by their documented names (docs/fields.md).
type jobDoc map[string]any

func (d jobDoc) get(path string) any {
	var v any = map[string]any(d)
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// num is a numeric field, NaN when absent.
func (d jobDoc) num(path string) float64 {
	if f, ok := d.get(path).(float64); ok {
		return f
	}
	return math.NaN()
}

func (d jobDoc) str(path string) string { s, _ := d.get(path).(string); return s }
func (d jobDoc) bool(path string) bool  { b, _ := d.get(path).(bool); return b }

// strs is a list of strings (missing_metrics).
func (d jobDoc) strs(path string) []string {
	var out []string
	list, _ := d.get(path).([]any)
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d jobDoc) causes() []string {
	var out []string
	list, _ := d.get("analysis.causes").([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			id, _ := m["id"].(string)
			out = append(out, id)
		}
	}
	return out
}

func (d jobDoc) hasCause(id string) bool {
	for _, c := range d.causes() {
		if c == id {
			return true
		}
	}
	return false
}

// jobDocs reads the cluster's job documents from the guest's ZincSearch
// through the forward, by document id.
func (n *Node) jobDocs(t *testing.T, ctx context.Context) map[string]jobDoc {
	t.Helper()
	body := fmt.Sprintf(`{"query":{"term":{"cluster":%q}},"size":200}`, cluster)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.ESURL+"/jobsight-jobs-*/_search", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(n.ESUser, n.ESPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("searching the guest's job index: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("searching the guest's job index: %s: %.500s", resp.Status, b)
	}
	var ans struct {
		Hits struct {
			Hits []struct {
				ID     string `json:"_id"`
				Source jobDoc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("decoding the search answer: %v", err)
	}
	docs := map[string]jobDoc{}
	for _, h := range ans.Hits.Hits {
		docs[h.ID] = h.Source
	}
	if keep := os.Getenv(EnvKeep); keep == "1" {
		_ = os.WriteFile(filepath.Join(n.Share, "out", "job-documents.json"), b, 0o644)
	}
	return docs
}

// jobPage renders a job's page through the datasource (the plugin's own
// code, in this process) reading the guest's stores, as an admin sees it.
func (n *Node) jobPage(t *testing.T, docID string) string {
	t.Helper()
	js, _ := json.Marshal(map[string]any{"elasticsearchUrl": n.ESURL, "prometheusUrl": n.PromURL, "elasticsearchUser": n.ESUser,
		"timeoutSeconds": 20, "identitySource": "unverifiedLogin"})
	inst := backend.DataSourceInstanceSettings{UID: "jobsight-v2node", JSONData: js, DecryptedSecureJSONData: map[string]string{"elasticsearchPassword": n.ESPassword}}
	i, err := plugin.NewDatasource(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	ds := i.(*plugin.Datasource)
	defer ds.Dispose()
	path := "job?job=" + url.QueryEscape(docID)
	var page []byte
	var status int
	err = ds.CallResource(context.Background(), &backend.CallResourceRequest{
		PluginContext: backend.PluginContext{User: &backend.User{Login: "admin", Role: "Admin"}, DataSourceInstanceSettings: &inst},
		Path:          "job", Method: http.MethodGet, URL: path, Headers: map[string][]string{},
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		status, page = r.Status, r.Body
		return nil
	}))
	if err != nil || status != http.StatusOK {
		t.Fatalf("the job page of %s: %d %v\n%.500s", docID, status, err, page)
	}
	if os.Getenv(EnvKeep) == "1" {
		_ = os.WriteFile(filepath.Join(n.Share, "out", "page-"+strings.ReplaceAll(docID, ":", "_")+".html"), page, 0o644)
	}
	return string(page)
}
