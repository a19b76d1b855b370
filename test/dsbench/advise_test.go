package dsbench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/site/advise"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
)

// TestAdviseLatency (JOBSIGHT_DSBENCH=1, as root) measures `jobsight
// advise` end to end, the whole process as cli_filter.lua starts it (exec,
// configuration, the store's info and one search, the advice), against the
// generated history: JOBSIGHT_DSBENCH_JOBS finished jobs (10,000 over 7
// days by default; 100000 with JOBSIGHT_DSBENCH_SPAN=365d for a year of a
// mid-size site). Each call is for a different recent job, as its own user
// (by uid) with that job's request, with no cache (no /run/user of those
// uids): the cost of every first submission. It prints the percentiles;
// it asserts nothing about time.
// EnvAdviseFetch sets the command's advise.fetch (default 60) for a
// comparison.
const EnvAdviseFetch = "JOBSIGHT_DSBENCH_ADVISE_FETCH"

func TestAdviseLatency(t *testing.T) {
	if os.Getenv(EnvVar) != "1" || os.Geteuid() != 0 {
		t.Skipf("a benchmark: JOBSIGHT_DSBENCH=1, as root (to run the command as the jobs' users)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	e, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d finished jobs (indexing took %s)", e.Finished, e.IndexTook.Round(time.Second))

	dir, err := os.MkdirTemp("", "jsadvbench-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "jobsight")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/jobsight")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	es := e.Stack.Elasticsearch
	ca := ""
	if es.CACertFile != "" {
		ca = "\n  ca_file: " + es.CACertFile
	}
	// A configuration and password file of each user's own (the command
	// refuses a password file others can read; the setgid installation
	// is not what is measured here).
	configFor := func(uid uint32) string {
		cfg := filepath.Join(dir, fmt.Sprintf("site-%d.yaml", uid))
		if _, err := os.Stat(cfg); err == nil {
			return cfg
		}
		pw := filepath.Join(dir, fmt.Sprintf("pw-%d", uid))
		site := fmt.Sprintf("elasticsearch:\n  urls: [%q]%s\n  username: %q\n  password_file: %s\n  job_index: %s\n",
			es.URL, ca, es.User, pw, Index)
		if f := os.Getenv(EnvAdviseFetch); f != "" {
			site += "advise: {fetch: " + f + "}\n"
		}
		for _, f := range []struct{ path, content string }{{pw, es.Password}, {cfg, site}} {
			if err := os.WriteFile(f.path, []byte(f.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(f.path, int(uid), int(uid)); err != nil {
				t.Fatal(err)
			}
		}
		return cfg
	}

	// The jobs to advise for: the most recent finished ones.
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 60
	raw, err := c.Search(ctx, jobmodel.SearchIndices(Index), []byte(fmt.Sprintf(
		`{"size":%d,"query":{"bool":{"filter":[{"term":{"final":true}}]}},"sort":[{"end_time":"desc"}]}`, calls)))
	if err != nil {
		t.Fatal(err)
	}
	var ans store.SearchAnswer[jobmodel.Job]
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	// Two passes over the same calls: the first right after the store
	// started (or seeded), the second with the store warm, as a login
	// node's store runs; the command keeps no cache here either way.
	var passes [2][]time.Duration
	var timeouts [2]int
	advised, based := 0, 0
	for pass := range passes {
		var took []time.Duration
		advised, based = 0, 0
		for _, h := range ans.Hits.Hits {
			j := h.Source
			if j.UID == nil || j.Requested.CPUs == nil {
				continue
			}
			args := []string{"advise", "--config", configFor(*j.UID), "--json", "--partition", j.Partition, "--account", j.Account,
				"--job-name", j.Name, "--cpus-per-task", strconv.FormatInt(*j.Requested.CPUs, 10)}
			if m := j.Requested.MemoryPerNodeBytes; m != nil {
				args = append(args, "--mem", strconv.FormatInt(*m>>20, 10)+"M")
			}
			if l := j.TimeLimitSeconds; l != nil && *l > 0 {
				args = append(args, "--time", strconv.FormatInt(*l/60, 10))
			}
			if g := j.Requested.GPUs; g != nil && *g > 0 {
				args = append(args, "--gpus", strconv.FormatInt(*g, 10))
			}
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: *j.UID, Gid: *j.UID, Groups: []uint32{}}}
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Dir = "/"
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if err != nil && strings.Contains(string(out), "did not answer within advise.timeout") {
				// What sbatch's filter would do: no advice this time.
				took = append(took, d)
				timeouts[pass]++
				continue
			}
			if err != nil {
				t.Fatalf("advise for %s (uid %d): %v\n%s", j.DocID, *j.UID, err, out)
			}
			took = append(took, d)
			var a struct {
				Jobs    int   `json:"jobs"`
				Changes []any `json:"changes"`
			}
			if err := json.Unmarshal(out, &a); err != nil {
				t.Fatalf("advise for %s: %v\n%s", j.DocID, err, out)
			}
			if a.Jobs > 0 {
				based++
			}
			if len(a.Changes) > 0 {
				advised++
			}
		}
		passes[pass] = took
	}
	took := passes[1]
	if len(took) == 0 {
		t.Fatal("no job to advise for")
	}
	for i, took := range passes {
		slices.Sort(took)
		pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
		fmt.Printf("jobsight advise over %d finished jobs (%s), %s: %d calls, p50 %s, p95 %s, max %s; %d based on comparable jobs, %d with advice; %d past advise.timeout; 2 store requests each (info, one search), no cache; fetch %s\n",
			e.Finished, FinishedSpan, []string{"store just started", "store warm"}[i], len(took), pct(0.5).Round(time.Millisecond), pct(0.95).Round(time.Millisecond),
			took[len(took)-1].Round(time.Millisecond), based, advised, timeouts[i], cmp.Or(os.Getenv(EnvAdviseFetch), strconv.Itoa(advise.Default().Fetch)+" (default)"))
	}
}
