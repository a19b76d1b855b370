package slurm

import "testing"

func TestParseTimeLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"90": 5400, "1:30": 90, "02:00:00": 7200, "1-12": 36 * 3600, "1-00:30": 86400 + 1800,
		"2-01:02:03": 2*86400 + 3600 + 120 + 3, "UNLIMITED": 0, "infinite": 0, "0": 0, "-1": 0, " 30 ": 1800, "00:00:00": 0, "0:00": 0,
	} {
		got, err := ParseTimeLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseTimeLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "1:2:3:4", "1-2-3", "-5", "1.5", "1-", ":30", "999999999", "1h"} {
		if got, err := ParseTimeLimit(in); err == nil {
			t.Errorf("ParseTimeLimit(%q) = %d, want an error", in, got)
		}
	}
}

func FuzzParseTimeLimit(f *testing.F) {
	for _, s := range []string{"90", "1:30", "2-01:02:03", "UNLIMITED", "1-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sec, err := ParseTimeLimit(s)
		if err == nil && sec < 0 {
			t.Fatalf("ParseTimeLimit(%q) = %d, negative", s, sec)
		}
	})
}
