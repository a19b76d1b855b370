package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func TestNiceSizes(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]int64{
		0: 1, 1: 1, 1.5: 2, 2: 2, 2.1: 3, 3: 3, 3.5: 4, 5: 6, 7: 8, 250: 256, 257: 384, 400: 512, 600: 768,
		1000: 1024, 1025: 1536, 1600: 2048, 3840: 4096, 6400: 8192, 100000: 131072, 131073: 196608,
	} {
		if got := niceMiB(in); got != want {
			t.Errorf("niceMiB(%v) = %d, want %d", in, got, want)
		}
	}
}

func TestSlurmNotation(t *testing.T) {
	t.Parallel()
	for b, want := range map[int64]string{
		8 * giB: "8G", giB: "1G", 1536 << 20: "1536M", 384 << 20: "384M", 512 * giB: "512G",
		8_000_000_000: "7629M", 1: "1M", 0: "1M",
	} {
		if got := slurmMem(b); got != want {
			t.Errorf("slurmMem(%d) = %q, want %q", b, got, want)
		}
	}
	for s, want := range map[int64]string{
		0: "00:00:00", 1800: "00:30:00", 7200: "02:00:00", 6300: "01:45:00", 86400: "24:00:00",
		86401: "1-00:00:01", 2 * 86400: "2-00:00:00", 36*3600 + 90: "1-12:01:30",
	} {
		if got := slurmTime(s); got != want {
			t.Errorf("slurmTime(%d) = %q, want %q", s, got, want)
		}
	}
	for s, want := range map[float64]string{
		30: "30s", 900: "15m", 3600: "1h", 4700: "1h18m", 86400: "1d", 90000: "1d01h",
	} {
		if got := duration(s); got != want {
			t.Errorf("duration(%v) = %q, want %q", s, got, want)
		}
	}
}

// timeJob is a completed job that ran el seconds of a 24-hour limit.
func timeJob(el float64) jobmodel.Job {
	j := baseCPU()
	j.ElapsedSeconds, j.TimeLimitSeconds = p(el), p[int64](86400)
	return j
}

func TestTimeRecommendation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		el   float64
		cfg  func(*Config)
		want string
	}{
		{4700, nil, "--time=02:00:00"}, // 7050 s → next 15 min
		{3900, nil, "--time=01:45:00"}, // 5850 s → 6300 s
		{3600, nil, "--time=01:30:00"}, // exactly on a step
		{700, nil, "--time=00:30:00"},  // 1050 s → floor 30 min
		{4700, func(c *Config) { c.Recommend.TimeStep = time.Hour }, "--time=02:00:00"},
		{4700, func(c *Config) { c.Recommend.MinTime = 4 * time.Hour }, "--time=04:00:00"},
		{4700, func(c *Config) { c.Recommend.TimeHeadroom = 3 }, "--time=04:00:00"},
		{5 * 3600, nil, "--time=07:30:00"},
	} {
		cfg := Default()
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		a := analyze(timeJob(tc.el), cfg)
		checkInvariants(t, a)
		c := changeOf(a, "--time")
		if c == nil || c.From != "--time=24:00:00" || c.To != tc.want {
			t.Errorf("elapsed %v: change %+v, want --time=24:00:00 -> %s", tc.el, c, tc.want)
			continue
		}
		if a.Recommendation.TimeLimitSeconds == nil || slurmTime(*a.Recommendation.TimeLimitSeconds) != tc.want[len("--time="):] {
			t.Errorf("elapsed %v: time_limit_seconds %v", tc.el, a.Recommendation.TimeLimitSeconds)
		}
	}
	// A limit of days renders as Slurm's days form.
	j := timeJob(3600)
	j.TimeLimitSeconds = p[int64](3 * 86400)
	if c := changeOf(analyze(j, Default()), "--time"); c == nil || c.From != "--time=3-00:00:00" || c.To != "--time=01:30:00" {
		t.Errorf("3-day limit: %+v", c)
	}
}

func TestMemoryRecommendation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		edit                 func(*jobmodel.Job)
		cfg                  func(*Config)
		from, to             string
		perNode, total       int64
		savingsGiBPerElapsed float64 // GiB freed
	}{
		{"floor", func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p[int64](200 << 20) }, nil,
			"--mem=16G", "--mem=1G", giB, giB, 15},
		{"3 GiB peak: 3.75 rounds to 4", func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p(3 * giB) }, nil,
			"--mem=16G", "--mem=4G", 4 * giB, 4 * giB, 12},
		{"5 GiB peak is no cause", func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p(5 * giB) },
			func(c *Config) { c.Rules.MemoryOverrequest.MaxMemoryEfficiency = 0.5 },
			"--mem=16G", "--mem=8G", 8 * giB, 8 * giB, 8},
		{"lower floor, MiB sizes", func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p[int64](300 << 20) },
			func(c *Config) { c.Recommend.MinMemoryGiB = 0.25 }, "--mem=16G", "--mem=384M", 384 << 20, 384 << 20, 16 - 0.375},
		{"more headroom", func(j *jobmodel.Job) { j.Memory.MaxNodePeakBytes = p(2 * giB) },
			func(c *Config) { c.Recommend.MemoryHeadroom = 2 }, "--mem=16G", "--mem=4G", 4 * giB, 4 * giB, 12},
		{"two nodes, per-node request", func(j *jobmodel.Job) {
			j.Requested.Nodes, j.NodeCount = p[int64](2), 2
			j.Requested.MemoryBytes = p(32 * giB)
			j.Memory.PeakBytes = p(3 * giB)
			j.Memory.MaxNodePeakBytes = p(2 * giB)
		}, nil, "--mem=16G", "--mem=3G", 3 * giB, 6 * giB, 26},
		{"two nodes, total request only", func(j *jobmodel.Job) {
			j.Requested.Nodes, j.NodeCount = p[int64](2), 2
			j.Requested.MemoryBytes, j.Requested.MemoryPerNodeBytes = p(64*giB), nil
			j.Memory.PeakBytes = p(8 * giB)
			j.Memory.MaxNodePeakBytes = nil
		}, nil, "--mem=32G", "--mem=6G", 6 * giB, 12 * giB, 52},
	} {
		cfg := Default()
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		j := baseCPU()
		tc.edit(&j)
		a := analyze(j, cfg)
		checkInvariants(t, a)
		c := changeOf(a, "--mem")
		if c == nil || c.From != tc.from || c.To != tc.to {
			t.Errorf("%s: change %+v, want %s -> %s (causes %v)", tc.name, c, tc.from, tc.to, ids(a))
			continue
		}
		r := a.Recommendation
		if r.MemoryPerNodeBytes == nil || *r.MemoryPerNodeBytes != tc.perNode || r.MemoryBytes == nil || *r.MemoryBytes != tc.total {
			t.Errorf("%s: per node %v total %v, want %d %d", tc.name, r.MemoryPerNodeBytes, r.MemoryBytes, tc.perNode, tc.total)
		}
		if s := a.Savings.MemoryGiBHours; s == nil || math.Abs(*s-tc.savingsGiBPerElapsed*2) > 1e-9 {
			t.Errorf("%s: memory GiB-hours %v, want %v", tc.name, s, tc.savingsGiBPerElapsed*2)
		}
	}
}

func TestCPURecommendation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		edit     func(*jobmodel.Job)
		from, to string
		option   string
		total    int64
	}{
		{"serial on 4", func(j *jobmodel.Job) { serial(j, 4) }, "--cpus-per-task=4", "--cpus-per-task=1", "--cpus-per-task", 1},
		{"serial, sampling noise", func(j *jobmodel.Job) {
			serial(j, 8)
			j.CPU.P95Cores = p(1.08)
		}, "--cpus-per-task=8", "--cpus-per-task=1", "--cpus-per-task", 1},
		{"16 CPUs, 3.5 used", func(j *jobmodel.Job) {
			j.Requested.CPUs = p[int64](16)
			setCPUEff(j, 0.2) // p95 3.52 → 3.87 − 0.25 → 4
		}, "--cpus-per-task=16", "--cpus-per-task=4", "--cpus-per-task", 4},
		{"4 tasks of 4 CPUs", func(j *jobmodel.Job) {
			j.Requested.CPUs, j.Requested.Tasks = p[int64](16), p[int64](4)
			setCPUEff(j, 0.2)
		}, "--cpus-per-task=4", "--cpus-per-task=1", "--cpus-per-task", 4},
		{"16 tasks of one CPU", func(j *jobmodel.Job) {
			j.Requested.CPUs, j.Requested.Tasks = p[int64](16), p[int64](16)
			setCPUEff(j, 0.2)
		}, "--ntasks=16", "--ntasks=4", "--ntasks", 4},
		{"no task count, one node: one task", func(j *jobmodel.Job) {
			serial(j, 4)
			j.Requested.Tasks = nil
		}, "--cpus-per-task=4", "--cpus-per-task=1", "--cpus-per-task", 1},
		{"GPU job with too many cores", func(j *jobmodel.Job) {
			g := baseGPU(1)
			*j = g
			j.Requested.CPUs = p[int64](64)
			setCPUEff(j, 0.05) // p95 3.52
		}, "--cpus-per-task=64", "--cpus-per-task=4", "--cpus-per-task", 4},
	} {
		j := baseCPU()
		tc.edit(&j)
		a := analyze(j, Default())
		checkInvariants(t, a)
		c := changeOf(a, tc.option)
		if c == nil || c.From != tc.from || c.To != tc.to {
			t.Errorf("%s: change %+v, want %s -> %s (causes %v, changes %+v)", tc.name, c, tc.from, tc.to, ids(a), a.Recommendation.Changes)
			continue
		}
		if r := a.Recommendation.CPUs; r == nil || *r != tc.total {
			t.Errorf("%s: cpus %v, want %d", tc.name, r, tc.total)
		}
		cpus := float64(*j.Requested.CPUs)
		if s := a.Savings.CoreHours; s == nil || math.Abs(*s-(cpus-float64(tc.total))*2) > 1e-9 {
			t.Errorf("%s: core-hours saved %v", tc.name, s)
		}
	}

	// Not rendered: several nodes without a task count, or CPUs that do
	// not divide over the tasks. No CPU figure is recommended then.
	for name, edit := range map[string]func(*jobmodel.Job){
		"two nodes, no tasks": func(j *jobmodel.Job) {
			j.Requested.Tasks, j.Requested.Nodes = nil, p[int64](2)
		},
		"uneven tasks": func(j *jobmodel.Job) { j.Requested.Tasks = p[int64](3) },
	} {
		j := baseCPU()
		j.Requested.CPUs = p[int64](16)
		setCPUEff(&j, 0.2)
		edit(&j)
		a := analyze(j, Default())
		checkInvariants(t, a)
		if causeOf(a, CauseCPUOverrequest) == nil || a.Recommendation.CPUs != nil || changeOf(a, "--cpus-per-task") != nil || changeOf(a, "--ntasks") != nil {
			t.Errorf("%s: causes %v recommendation %+v", name, ids(a), a.Recommendation)
		}
		if a.Savings.CoreHours == nil || *a.Savings.CoreHours != 0 {
			t.Errorf("%s: core-hours saved %v, want 0", name, a.Savings.CoreHours)
		}
	}
}

func TestGPURecommendation(t *testing.T) {
	t.Parallel()
	j := baseGPU(8)
	for i := 2; i < 8; i++ {
		holdIdle(&j, i)
	}
	a := analyze(j, Default())
	checkInvariants(t, a)
	c := changeOf(a, "--gpus")
	if c == nil || c.From != "--gpus=8" || c.To != "--gpus=2" || a.Recommendation.GPUs == nil || *a.Recommendation.GPUs != 2 {
		t.Fatalf("change %+v recommendation %+v", c, a.Recommendation)
	}
	if s := a.Savings.GPUHours; s == nil || *s != 12 {
		t.Errorf("GPU-hours saved %v, want 12", s)
	}

	// Held-idle GPUs whose utilisation is unknown: the GPUs that had a
	// process are kept.
	j = baseGPU(4)
	holdIdle(&j, 2)
	holdIdle(&j, 3)
	j.GPUs[2].UtilizationAvg, j.GPUs[3].UtilizationAvg = nil, nil
	syncGPU(&j)
	a = analyze(j, Default())
	checkInvariants(t, a)
	if c := changeOf(a, "--gpus"); c == nil || c.To != "--gpus=2" {
		t.Errorf("unknown utilisation: change %+v (causes %v)", c, ids(a))
	}

	// No GPU did work: no GPU count is recommended (the lesson explains).
	j = baseGPU(2)
	setGPU(&j, 0, 0.01, 0.02)
	holdIdle(&j, 1)
	a = analyze(j, Default())
	checkInvariants(t, a)
	if changeOf(a, "--gpus") != nil || a.Savings.GPUHours == nil || *a.Savings.GPUHours != 0 {
		t.Errorf("no busy GPU: changes %+v savings %+v", a.Recommendation.Changes, a.Savings)
	}
}

// A job judged with nothing to change frees nothing (zero, not absent);
// a CPU job has no GPU savings at all.
func TestSavingsZeroAndAbsent(t *testing.T) {
	t.Parallel()
	a := analyze(baseGPU(2), Default())
	if a.Savings.GPUHours == nil || *a.Savings.GPUHours != 0 || a.Savings.CoreHours == nil || *a.Savings.CoreHours != 0 ||
		a.Savings.MemoryGiBHours == nil || *a.Savings.MemoryGiBHours != 0 {
		t.Errorf("efficient GPU job savings %+v", a.Savings)
	}
	a = analyze(baseCPU(), Default())
	if a.Savings.GPUHours != nil || a.Savings.CoreHours == nil {
		t.Errorf("CPU job savings %+v", a.Savings)
	}
	j := baseCPU()
	j.Requested = jobmodel.Request{}
	j.Memory.LimitBytes = nil
	a = analyze(j, Default())
	if a.Savings != (jobmodel.Savings{}) {
		t.Errorf("no request: savings %+v", a.Savings)
	}
}

// Recommendations only ever lower a request.
func TestRecommendationsNeverRaise(t *testing.T) {
	t.Parallel()
	j := baseCPU()
	j.Requested.CPUs = p[int64](4)
	setCPUEff(&j, 0.3)
	j.CPU.P95Cores = p(4.0) // bursts use every CPU
	a := analyze(j, Default())
	checkInvariants(t, a)
	if causeOf(a, CauseCPUOverrequest) == nil || a.Recommendation.CPUs != nil {
		t.Errorf("bursty job: causes %v recommendation %+v", ids(a), a.Recommendation)
	}
}
