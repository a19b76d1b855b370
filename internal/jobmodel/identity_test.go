package jobmodel

import (
	"strings"
	"testing"
	"time"
)

func TestDocIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id   Identity
		want string
	}{
		{Identity{Cluster: "hpc1", JobID: 4242}, "hpc1:4242"},
		{Identity{Cluster: "hpc1", JobID: 4250, ArrayJobID: 4242, ArrayTaskID: 7}, "hpc1:4242_7"},
		{Identity{Cluster: "hpc1", JobID: 4243, ArrayJobID: 4242, ArrayTaskID: 0}, "hpc1:4242_0"},
		{Identity{Cluster: "gpu-b", JobID: 5001, HetJobID: 5000, HetJobOffset: 1}, "gpu-b:5000+1"},
	}
	for _, c := range cases {
		if got := c.id.DocID(); got != c.want {
			t.Errorf("DocID(%+v) = %q, want %q", c.id, got, c.want)
		}
		back, err := ParseDocID(c.want)
		if err != nil {
			t.Fatalf("ParseDocID(%q): %v", c.want, err)
		}
		if back.DocID() != c.want {
			t.Errorf("ParseDocID(%q).DocID() = %q", c.want, back.DocID())
		}
	}
}

func TestSameJobIDOnTwoClustersDiffers(t *testing.T) {
	t.Parallel()
	a := Identity{Cluster: "a", JobID: 1}.DocID()
	b := Identity{Cluster: "b", JobID: 1}.DocID()
	if a == b {
		t.Fatalf("job 1 on clusters a and b share id %q", a)
	}
}

func TestReuseDocIDKeepsOlderJob(t *testing.T) {
	t.Parallel()
	base := Identity{Cluster: "hpc1", JobID: 17}.DocID()
	submit := time.Date(2026, 11, 21, 14, 53, 22, 0, time.FixedZone("CET", 3600))
	got := ReuseDocID(base, submit)
	if got != "hpc1:17@20261121T135322Z" {
		t.Fatalf("ReuseDocID = %q", got)
	}
	id, err := ParseDocID(got)
	if err != nil || id.DocID() != base {
		t.Fatalf("ParseDocID(%q) = %v, %v; want base %q", got, id.DocID(), err, base)
	}
	if NodeDocID(got, "n1") != "hpc1:17@20261121T135322Z/n1" {
		t.Fatalf("NodeDocID = %q", NodeDocID(got, "n1"))
	}
}

func TestBadIdentities(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "nocolon", ":1", "c:", "c:abc", "c:1_", "c:_1", "c:1+", "c:+2", "bad cluster:1",
		"c:99999999999999999999999", "c:-1", "c:0", strings.Repeat("x", 65) + ":1", "c:1_2_3"} {
		if _, err := ParseDocID(s); err == nil {
			t.Errorf("ParseDocID(%q) succeeded, want an error", s)
		} else if !strings.Contains(err.Error(), "document id") {
			t.Errorf("ParseDocID(%q) error %q does not name the document id", s, err)
		}
	}
}

func FuzzParseDocID(f *testing.F) {
	for _, s := range []string{"hpc1:4242", "hpc1:4242_7", "a:5000+1", "x:1@20261121T135322Z", "", "::", "a:1_+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseDocID(s)
		if err != nil {
			return
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("ParseDocID(%q) accepted an invalid identity: %v", s, err)
		}
		again, err := ParseDocID(id.DocID())
		if err != nil || again != id {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", s, id, id.DocID(), again, err)
		}
	})
}

// TestRunOf: a job's run identity is its submit time in Unix seconds, the
// same for every document of the job, and differs between two jobs that
// held the same id; unknown submit time gives no run.
func TestRunOf(t *testing.T) {
	t.Parallel()
	a := &Time{Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	b := &Time{Time: time.Date(2026, 11, 25, 12, 0, 1, 0, time.FixedZone("x", 3600))}
	if got := RunOf(a); got != "1795608000" {
		t.Errorf("RunOf(%v) = %q", a, got)
	}
	if RunOf(a) == RunOf(b) {
		t.Error("two submit times, one run")
	}
	if RunOf(nil) != "" || RunOf(&Time{}) != "" {
		t.Error("unknown submit time gave a run")
	}
}

func TestRunMatcher(t *testing.T) {
	t.Parallel()
	a := &Time{Time: time.Unix(1795608000, 0)}
	if got := RunMatcher(a); got != `,run=~"1795608000|"` {
		t.Errorf("RunMatcher = %s", got)
	}
	if RunMatcher(nil) != "" {
		t.Error("a matcher without a submit time")
	}
}
