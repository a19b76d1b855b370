package clusterstate

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/store/promremote"
)

// synthetic builds a sinfo and a squeue answer of a large cluster from
// the captured records (every field Slurm prints, so decoding costs what
// it costs on a real answer): nodes nodes in 8 partitions, a tenth of
// them drained, down or reserved, two GPU types; jobs jobs, a third
// pending.
func synthetic(t testing.TB, nodes, jobs int) (sinfo, squeue []byte) {
	t.Helper()
	var si, sq map[string]any
	if err := json.Unmarshal(readFixture(t, "sinfo-22.05.json"), &si); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(readFixture(t, "squeue-22.05.json"), &sq); err != nil {
		t.Fatal(err)
	}
	nodeTmpl := si["nodes"].([]any)[1].(map[string]any) // csnode1
	outNodes := make([]any, nodes)
	for i := range nodes {
		n := maps.Clone(nodeTmpl)
		n["name"] = fmt.Sprintf("n%04d", i)
		n["cpus"], n["alloc_cpus"] = 64, (i*7)%65
		n["real_memory"], n["alloc_memory"] = 512000, (i*1000)%512000
		n["partitions"] = []any{fmt.Sprintf("p%d", i%8), "all"}
		typ := []string{"a100", "h100"}[i%2]
		n["gres"] = "gpu:" + typ + ":8(S:0-1)"
		n["gres_used"] = fmt.Sprintf("gpu:%s:%d(IDX:0-%d)", typ, i%9, max(i%9-1, 0))
		n["state"], n["state_flags"] = "mixed", []any{}
		switch i % 40 {
		case 1:
			n["state"], n["state_flags"] = "idle", []any{"DRAIN"}
		case 2:
			n["state"], n["state_flags"] = "down", []any{"NOT_RESPONDING"}
		case 3:
			n["state"], n["state_flags"] = "idle", []any{"MAINTENANCE", "RESERVED"}
		case 4:
			n["state"], n["state_flags"] = "mixed", []any{"DRAIN"}
		}
		outNodes[i] = n
	}
	si["nodes"] = outNodes
	tmpl := sq["jobs"].([]any)
	running, pending := tmpl[0].(map[string]any), tmpl[4].(map[string]any) // 990943, 990947
	outJobs := make([]any, jobs)
	for i := range jobs {
		src := running
		if i%3 == 0 {
			src = pending
		}
		j := maps.Clone(src)
		j["job_id"] = 1000000 + i
		j["partition"] = fmt.Sprintf("p%d", i%8)
		outJobs[i] = j
	}
	sq["jobs"] = outJobs
	var err error
	if sinfo, err = json.Marshal(si); err != nil {
		t.Fatal(err)
	}
	if squeue, err = json.Marshal(sq); err != nil {
		t.Fatal(err)
	}
	return sinfo, squeue
}

// BenchmarkPoll is the collector's own work per poll on a 2,000-node,
// 10,000-job cluster: decoding both answers, the snapshot, the series
// (with staleness tracking), their remote-write encoding and the
// document. The Slurm calls themselves (two per poll) are not in it.
func BenchmarkPoll(b *testing.B) {
	sinfo, squeue := synthetic(b, 2000, 10000)
	b.Logf("sinfo --json %d KiB, squeue --json %d KiB", len(sinfo)>>10, len(squeue)>>10)
	now := time.Unix(1795455000, 0)
	var st staleness
	var nSeries, nBytes int
	b.SetBytes(int64(len(sinfo) + len(squeue)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := Build("big", now, sinfo, squeue)
		if err != nil {
			b.Fatal(err)
		}
		series := st.mark(Series(s, Health{}, true), now.UnixMilli())
		payload, err := promremote.Encode(series)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := json.Marshal(NewDocument(s, now, Health{}, 2))
		if err != nil {
			b.Fatal(err)
		}
		nSeries, nBytes = len(series), len(doc)
		_ = payload
	}
	b.ReportMetric(float64(nSeries), "series/poll")
	b.ReportMetric(float64(nBytes), "doc-bytes")
}

// BenchmarkBuild is decoding and the snapshot alone.
func BenchmarkBuild(b *testing.B) {
	sinfo, squeue := synthetic(b, 2000, 10000)
	now := time.Unix(1795455000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build("big", now, sinfo, squeue); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild26 is BenchmarkBuild with the squeue answer in Slurm
// 26.05's shape (data_parser v0.0.45: numbers and times as {"set",
// "infinite", "number"}, job_state a list, exit_code an object; each
// record built from the captured 26.05 job), 10,000 jobs, a third
// pending; sinfo as in BenchmarkBuild.
func BenchmarkBuild26(b *testing.B) {
	sinfo, _ := synthetic(b, 2000, 1)
	raw, err := os.ReadFile("../../slurm/testdata/squeue-26.05-running.json")
	if err != nil {
		b.Fatal(err)
	}
	var sq map[string]any
	if err := json.Unmarshal(raw, &sq); err != nil {
		b.Fatal(err)
	}
	tmpl := sq["jobs"].([]any)
	running, pending := tmpl[0].(map[string]any), tmpl[2].(map[string]any)
	out := make([]any, 10000)
	for i := range out {
		src := running
		if i%3 == 0 {
			src = pending
		}
		j := maps.Clone(src)
		j["job_id"] = map[string]any{"set": true, "infinite": false, "number": 1000000 + i}
		j["partition"] = fmt.Sprintf("p%d", i%8)
		out[i] = j
	}
	sq["jobs"] = out
	squeue, err := json.Marshal(sq)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("squeue --json (26.05) %d KiB", len(squeue)>>10)
	now := time.Unix(1795455000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build("big", now, sinfo, squeue); err != nil {
			b.Fatal(err)
		}
	}
}
