package analysis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// timelineFrom turns fuzz bytes into a timeline, with a few non-finite
// and out-of-range values.
func timelineFrom(b []byte) []float64 {
	if len(b) == 0 {
		return nil
	}
	out := make([]float64, 0, len(b))
	for _, x := range b {
		switch x {
		case 255:
			out = append(out, math.NaN())
		case 254:
			out = append(out, math.Inf(1))
		case 253:
			out = append(out, -3)
		default:
			out = append(out, float64(x)/200)
		}
	}
	return out
}

// FuzzAnalyzeJSON analyses arbitrary job documents: Analyze never panics
// and its figures stay in range.
func FuzzAnalyzeJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte{200, 200, 190, 180, 20, 10, 10, 10})
	}
	f.Add([]byte(`{}`), []byte(nil))
	f.Add([]byte(`{"elapsed_seconds":1e308,"requested":{"cpus":9223372036854775807,"memory_bytes":-5,"nodes":0},"cpu":{"core_seconds":1e308}}`), []byte{255, 254, 253})
	f.Add([]byte(`{"state":"COMPLETED","elapsed_seconds":7200,"time_limit_seconds":9223372036854775807,"requested":{"gpus":3},"gpu":{"count":0,"held":-1,"held_idle":9},"gpus":[{"held_idle":true,"utilization_avg":-1,"memory_total_bytes":0,"memory_peak_bytes":9223372036854775807}]}`), []byte{1})
	f.Fuzz(func(t *testing.T, doc, tl []byte) {
		var j jobmodel.Job
		if json.Unmarshal(doc, &j) != nil {
			return
		}
		a := Analyze(Input{Job: j, At: testNow, GPUTimeline: timelineFrom(tl)}, Default())
		checkInvariants(t, a)
	})
}

// FuzzAnalyzeRandom analyses random job documents in which any value may
// be absent, zero, negative, tiny or huge.
func FuzzAnalyzeRandom(f *testing.F) {
	for i := int64(0); i < 16; i++ {
		f.Add(i, uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed int64, knobs uint8) {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(knobs)))
		cfg := Default()
		if knobs&1 != 0 {
			cfg.ShortJob = 0
		}
		if knobs&2 != 0 {
			cfg.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu*"}
		}
		if knobs&4 != 0 {
			cfg.Classes.CPUMemoryWeight = 0
		}
		var tl []float64
		if r.IntN(2) == 0 {
			for n := r.IntN(40); n > 0; n-- {
				tl = append(tl, randFloat(r))
			}
		}
		a := Analyze(Input{Job: randomJob(r), At: testNow, GPUTimeline: tl}, cfg)
		checkInvariants(t, a)
	})
}

// TestRandomJobs runs the random generator without the fuzzing engine, so
// that `go test` covers it on every run.
func TestRandomJobs(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	cfg := Default()
	cfg.Rules.CPUJobOnGPUPartition.Partitions = []string{"gpu*"}
	for i := 0; i < 3000; i++ {
		cfg.ShortJob = time.Duration(r.IntN(3)) * 5 * time.Minute
		var tl []float64
		for n := r.IntN(20); n > 0; n-- {
			tl = append(tl, randFloat(r))
		}
		checkInvariants(t, Analyze(Input{Job: randomJob(r), GPUTimeline: tl}, cfg))
	}
	// An invalid (zero) configuration gives unspecified results, but no
	// panic and no out-of-range figure.
	for i := 0; i < 300; i++ {
		checkInvariants(t, Analyze(Input{Job: randomJob(r)}, Config{}))
	}
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(12) {
	case 0:
		return 0
	case 1:
		return -r.Float64() * 10
	case 2:
		return math.MaxFloat64
	case 3:
		return math.NaN()
	case 4:
		return math.Inf(1)
	case 5:
		return 1e-300
	case 6:
		return r.Float64() * 1e7
	case 7:
		return 1
	}
	return r.Float64()
}

func randInt(r *rand.Rand) int64 {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1:
		return -r.Int64N(100)
	case 2:
		return math.MaxInt64
	case 3:
		return 1 << 62
	case 4:
		return r.Int64N(1 << 50)
	case 5:
		return 1
	}
	return r.Int64N(256)
}

func maybeF(r *rand.Rand) *float64 {
	if r.IntN(4) == 0 {
		return nil
	}
	return p(randFloat(r))
}

func maybeI(r *rand.Rand) *int64 {
	if r.IntN(4) == 0 {
		return nil
	}
	return p(randInt(r))
}

func randomJob(r *rand.Rand) jobmodel.Job {
	states := []string{jobmodel.StateCompleted, jobmodel.StateFailed, jobmodel.StateCancelled, jobmodel.StateTimeout,
		jobmodel.StateOutOfMemory, jobmodel.StateRunning, jobmodel.StateUnknown, ""}
	j := jobmodel.Job{
		State: states[r.IntN(len(states))], Partition: []string{"", "gpu", "cpu", "gpu,cpu", "gpu-a100"}[r.IntN(5)],
		NodeCount: int(randInt(r) % 1000), ElapsedSeconds: maybeF(r), TimeLimitSeconds: maybeI(r),
		Requested: jobmodel.Request{CPUs: maybeI(r), MemoryBytes: maybeI(r), MemoryPerNodeBytes: maybeI(r),
			GPUs: maybeI(r), Nodes: maybeI(r), Tasks: maybeI(r)},
	}
	if r.IntN(3) == 0 {
		start := time.Unix(r.Int64N(1<<40), 0)
		j.StartTime = jobmodel.At(start)
		j.EndTime = jobmodel.At(start.Add(time.Duration(r.Int64N(1<<50) - 1<<40)))
	}
	if r.IntN(5) != 0 {
		j.CPU = &jobmodel.CPUUsage{CoreSeconds: maybeF(r), AvgCores: maybeF(r), P95Cores: maybeF(r), PeakCores: maybeF(r),
			Efficiency: maybeF(r)}
	}
	if r.IntN(5) != 0 {
		j.Memory = &jobmodel.MemoryUsage{PeakBytes: maybeI(r), RSSPeakBytes: maybeI(r), LimitBytes: maybeI(r),
			MaxNodePeakBytes: maybeI(r)}
	}
	if r.IntN(3) == 0 {
		j.Threads = &jobmodel.CountUsage{Peak: maybeI(r)}
	}
	if r.IntN(2) == 0 {
		j.GPU = &jobmodel.GPUUsage{Count: randInt(r), Held: maybeI(r), UtilizationAvg: maybeF(r), EffectiveGPUs: maybeI(r),
			HeldIdle: maybeI(r), Source: []string{"", "nvml", "amdsmi"}[r.IntN(3)]}
		for n := r.IntN(10); n > 0; n-- {
			d := jobmodel.GPUDevice{Index: randInt(r), Vendor: []string{"", "nvidia", "amd", "AMD"}[r.IntN(4)],
				Node: []string{"", "n1", "n2"}[r.IntN(3)], Held: r.IntN(2) == 0, HeldIdle: r.IntN(3) == 0,
				UtilizationAvg: maybeF(r), MemoryPeakBytes: maybeI(r), MemoryTotalBytes: maybeI(r), JobMemoryPeakBytes: maybeI(r),
				Partition: []string{"", "GCD", "CPX", "1g.10gb"}[r.IntN(4)]}
			if r.IntN(5) == 0 {
				d.ParentIndex = p[int64](0)
			}
			if r.IntN(2) == 0 {
				d.Activity = randomActivity(r)
			}
			j.GPUs = append(j.GPUs, d)
		}
		if r.IntN(3) == 0 {
			j.GPU.Activity = randomActivity(r)
		}
	}
	if r.IntN(10) == 0 {
		j.MissingMetrics = []string{"gpu"}
	}
	return j
}

// randomActivity is a GPU's activity with any figure absent, zero, out of
// range or not finite.
func randomActivity(r *rand.Rand) *jobmodel.GPUActivity {
	stat := func() *jobmodel.Stat {
		if r.IntN(3) == 0 {
			return nil
		}
		return &jobmodel.Stat{Avg: maybeF(r), P95: maybeF(r), Peak: maybeF(r)}
	}
	a := &jobmodel.GPUActivity{}
	for _, s := range []**jobmodel.Stat{&a.SM, &a.SMOccupancy, &a.Tensor, &a.TensorFP64, &a.TensorFP16, &a.TensorINT8,
		&a.FP64, &a.FP32, &a.FP16, &a.DRAM, &a.PCIeRxBytesPerSecond, &a.PCIeTxBytesPerSecond,
		&a.LinkRxBytesPerSecond, &a.LinkTxBytesPerSecond} {
		*s = stat()
	}
	return a
}
