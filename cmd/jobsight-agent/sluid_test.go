package main

import (
	"bytes"
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
