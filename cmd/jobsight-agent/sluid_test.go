package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A spawned agent takes SLURM_JOB_SLUID from the prolog's environment
// only when it is a SLUID; anything else is left out with a warning.
func TestStartSLUIDFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"s2MNKT07NV0000", "s2MNKT07NV0000"},
		{"", ""},
		{"../../x", ""},
		{"s2mnkt07nv0000", ""},
		{"s2MNKT07NV00000", ""},
	} {
		var logged bytes.Buffer
		t.Setenv("SLURM_JOB_SLUID", tc.env)
		if got := startSLUID(slog.New(slog.NewTextHandler(&logged, nil))); got != tc.want {
			t.Errorf("SLURM_JOB_SLUID=%q: %q, want %q", tc.env, got, tc.want)
		}
		if warned := strings.Contains(logged.String(), "not a SLUID"); warned != (tc.env != tc.want) {
			t.Errorf("SLURM_JOB_SLUID=%q: log %q", tc.env, logged.String())
		}
	}
}

// A spawned agent takes SLURM_JOB_NODELIST from the prolog's or epilog's
// environment, which has no SLURM_JOB_ID; a list of another job (typed in
// an salloc shell of job 77), too long or not a host list is left out.
func TestRequestNodesFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct{ nodes, jobID, want string }{
		{"n[1-3]", "", "n[1-3]"},
		{"n[1-3]", "42", "n[1-3]"},
		{"n[1-3]", "77", ""},
		{"", "", ""},
		{`n1"},"op":"stop`, "", ""},
		{strings.Repeat("n", 4001), "", ""},
	} {
		t.Setenv("SLURM_JOB_NODELIST", tc.nodes)
		t.Setenv("SLURM_JOB_ID", tc.jobID)
		if got := requestNodes(slog.New(slog.NewTextHandler(io.Discard, nil)), 42); got != tc.want {
			t.Errorf("SLURM_JOB_NODELIST=%.20q SLURM_JOB_ID=%q: %q, want %q", tc.nodes, tc.jobID, got, tc.want)
		}
	}
}
