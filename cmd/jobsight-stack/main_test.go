package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseHistory(t *testing.T) {
	h, err := parseHistory("30d", 200)
	if err != nil || h.span != 30*24*time.Hour || h.perDay != 200 {
		t.Fatalf("30d at 200/day: %+v, %v", h, err)
	}
	for _, c := range []struct {
		span   string
		perDay float64
		want   string
	}{
		{"", 200, "--history-jobs-per-day needs --history"},
		{"0d", 200, `--history: history length "0d": must be positive`},
		{"-2w", 200, "must be positive"},
		{"401d", 200, "longer than 400 days"},
		{"30", 200, "want a number with a unit h, d or w"},
		{"thirty", 200, "want a number with a unit"},
		{"30d", 0, "jobs per day 0"},
		{"30d", -1, "jobs per day -1"},
		{"400d", 1000, "at most 50000"},
	} {
		_, err := parseHistory(c.span, c.perDay)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--history %q --history-jobs-per-day %v: %v, want an error with %q", c.span, c.perDay, err, c.want)
		}
	}
}
