package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestAdviseRequestFromSbatchOptions(t *testing.T) {
	r, err := sbatchOptions{cpusPerTask: "4", ntasks: "2", nodes: "2-4", mem: "8G", gres: "gres/gpu:a100:2,shard:1",
		time: "1-00:00:00", partition: "gpu,debug", name: "train"}.request()
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUs() != 8 || r.Nodes != 2 || r.MemPerNodeBytes != 8<<30 || r.GPUs != 4 || !r.GPUsFromGres || r.TimeLimitSeconds != 86400 ||
		strings.Join(r.Partitions(), ",") != "gpu,debug" || r.JobName() != "train" {
		t.Errorf("request %+v", r)
	}
	// --gres is per node (2 GPUs on each of 2 nodes above), --gpus per job.
	if r, _ = (sbatchOptions{nodes: "2", gpus: "a100:2"}).request(); r.GPUs != 2 || r.GPUsFromGres {
		t.Errorf("--gpus a100:2 on 2 nodes: %+v", r)
	}
	// What Slurm's cli_filter passes for unset options ("0" CPUs per
	// task, no memory) is not given.
	r, err = sbatchOptions{cpusPerTask: "0", mem: "0", time: "UNLIMITED"}.request()
	if err != nil || r.CPUs() != 1 || r.MemPerNode() != 0 || r.TimeLimitSeconds != 0 {
		t.Errorf("unset options: %+v %v", r, err)
	}
	for _, bad := range []sbatchOptions{{mem: "lots"}, {cpusPerTask: "-3"}, {time: "soon"}, {gres: "gpu:a100:x:y"}, {name: "a\x00b"}} {
		if _, err := bad.request(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// Bad input on the command line gets exit 2 and a message naming the
// option, before any configuration or store is read.
func TestAdviseBadOptionsNameTheOption(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"advise", "--config", "/nonexistent/site.yaml", "--mem", "12Q"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--mem") || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func FuzzAdviseRequest(f *testing.F) {
	f.Add("4", "2", "1-2", "8G", "", "a100:2", "gpu:2", "1-00:00", "p", "acct", "name", "/a/b")
	f.Fuzz(func(t *testing.T, c, n, nodes, mem, mpc, gpus, gres, tl, p, a, name, script string) {
		r, err := sbatchOptions{c, n, nodes, mem, mpc, gpus, gres, tl, p, a, name, script}.request()
		if err != nil {
			return
		}
		if r.CPUs() < 1 || r.MemPerNode() < 0 || r.GPUs < 0 || r.TimeLimitSeconds < 0 {
			t.Fatalf("request %+v", r)
		}
	})
}
