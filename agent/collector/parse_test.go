package collector

import (
	"errors"
	"testing"
)

func TestParseUint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		bad  bool
	}{
		{"0\n", 0, false},
		{"9223372036854771712\n", 9223372036854771712, false},
		{"18446744073709551615", 18446744073709551615, false},
		{"18446744073709551616", 0, true},
		{"", 0, true},
		{"\n", 0, true},
		{"-1", 0, true},
		{"+1", 0, true},
		{"1 2", 0, true},
		{"0x10", 0, true},
	} {
		got, err := parseUint([]byte(tc.in))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseUint(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.bad)
		}
		if err != nil && !errors.Is(err, errSyntax) {
			t.Errorf("parseUint(%q): error %v does not wrap errSyntax", tc.in, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
		bad  bool
	}{
		{"0-3,8\n", 5, false},
		{"0-7,16-23\n", 16, false},
		{"5\n", 1, false},
		{"0-255\n", 256, false},
		{"\n", 0, false}, // empty cpuset
		{"", 0, false},
		{"3-1", 0, true},
		{"0-3,", 0, true},
		{",1", 0, true},
		{"0--3", 0, true},
		{"a-b", 0, true},
		{"0-65536", 0, true},
		{"0 - 3", 0, true},
	} {
		got, err := parseCPUList([]byte(tc.in))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseCPUList(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestKeyValue(t *testing.T) {
	const memStat = "cache 1073741824\nrss 0\nrss_huge 0\ntotal_rss_huge 2097152\ntotal_rss 5368709120\n"
	for _, tc := range []struct {
		in, key string
		want    uint64
		found   bool
		bad     bool
	}{
		{memStat, "total_rss", 5368709120, true, false},
		{memStat, "rss", 0, true, false},
		{memStat, "total_cache", 0, false, false},
		{"usage_usec 123456789\nuser_usec 1\n", "usage_usec", 123456789, true, false},
		{"usage_usec\n", "usage_usec", 0, false, false},
		{"usage_usec x\n", "usage_usec", 0, true, true},
		{"anon 5\nanon_thp 7", "anon_thp", 7, true, false},
		{"", "anon", 0, false, false},
	} {
		got, found, err := keyValue([]byte(tc.in), tc.key)
		if got != tc.want || found != tc.found || (err != nil) != tc.bad {
			t.Errorf("keyValue(%q, %s) = %d, %v, %v; want %d, %v, error %v", tc.in, tc.key, got, found, err, tc.want, tc.found, tc.bad)
		}
	}
}

func TestParseIOStat(t *testing.T) {
	for _, tc := range []struct {
		in     string
		rb, wb uint64
		bad    bool
	}{
		{"8:0 rbytes=3221225472 wbytes=1073741824 rios=786432 wios=262144 dbytes=0 dios=0\n259:0 rbytes=1048576 wbytes=524288 rios=256 wios=128 dbytes=0 dios=0\n", 3222274048, 1074266112, false},
		{"", 0, 0, false},
		{"8:16 rbytes=1 wbytes=2 rios=1 wios=1 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=5 cost.wait=0 cost.indebt=0 cost.indelay=0\n", 1, 2, false},
		{"8:0 rbytes=x wbytes=1\n", 0, 0, true},
		{"rbytes=1\n", 0, 0, true},
		{"8:0 rbytes\n", 0, 0, true},
		{"8:0 rbytes=18446744073709551615\n8:1 rbytes=1\n", 0, 0, true},
	} {
		rb, wb, err := parseIOStat([]byte(tc.in))
		if rb != tc.rb || wb != tc.wb || (err != nil) != tc.bad {
			t.Errorf("parseIOStat(%q) = %d, %d, %v; want %d, %d, error %v", tc.in, rb, wb, err, tc.rb, tc.wb, tc.bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// Captured from /proc/self/stat on a Linux 5.x host.
	const real = "4810 (cat) R 4800 4800 4439 0 -1 4194304 99 0 0 0 7 3 2 1 20 0 1 0 17103 3133440 413 18446744073709551615 94582887874560 94582887894441 140724643430640 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94582887910448 94582887912064 94583829258240 140724643433144 140724643433164 140724643433164 140724643434475 0\n"
	st, err := parseProcStat([]byte(real))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{State: 'R', PPID: 4800, UTime: 7, STime: 3, CUTime: 2, CSTime: 1, Threads: 1, StartTime: 17103, RSSPages: 413}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	// A command name with spaces and parentheses (a process may name
	// itself anything up to 15 bytes).
	tricky := "77 ((my) x) y) S 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 4 0 999 0 12 0\n"
	st, err = parseProcStat([]byte(tricky))
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != 1 || st.UTime != 5 || st.STime != 6 || st.Threads != 4 || st.StartTime != 999 || st.RSSPages != 12 {
		t.Errorf("tricky comm: got %+v", st)
	}
	for _, bad := range []string{
		"", "77 cat S 1", "77 (cat) S 1 2 3", "77 (cat) S -1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 4 0 999 0 12 0",
		"77 (cat) SS 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 4 0 999 0 12 0",
		"77 (cat) S 1 77 77 0 -1 0 0 0 0 0 x 6 0 0 20 0 4 0 999 0 12 0",
		"77 ) S 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 4 0 999 0 12 0 (",
	} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func TestParseProcIO(t *testing.T) {
	const real = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n"
	r, w, err := parseProcIO([]byte(real))
	if err != nil || r != 4096 || w != 8192 {
		t.Errorf("got %d, %d, %v; want 4096, 8192", r, w, err)
	}
	for _, bad := range []string{"", "rchar: 1\n", "read_bytes: x\nwrite_bytes: 1\n", "read_bytes: 1\n"} {
		if _, _, err := parseProcIO([]byte(bad)); err == nil {
			t.Errorf("parseProcIO(%q): no error", bad)
		}
	}
}

func TestAppendPIDsAndCountLines(t *testing.T) {
	pids, err := appendPIDs(nil, []byte("1\n22\n333\n"))
	if err != nil || len(pids) != 3 || pids[2] != 333 {
		t.Errorf("appendPIDs = %v, %v", pids, err)
	}
	for _, bad := range []string{"0\n", "2147483648\n", "x\n", "-5\n"} {
		if _, err := appendPIDs(nil, []byte(bad)); err == nil {
			t.Errorf("appendPIDs(%q): no error", bad)
		}
	}
	for in, want := range map[string]uint32{"": 0, "1\n": 1, "1\n2\n3\n": 3, "1\n2": 2, "\n\n": 0} {
		if got := countLines([]byte(in)); got != want {
			t.Errorf("countLines(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseUintOrMax(t *testing.T) {
	if _, max, err := parseUintOrMax([]byte("max\n")); !max || err != nil {
		t.Errorf("max: %v %v", max, err)
	}
	if v, max, err := parseUintOrMax([]byte("1073741824\n")); v != 1<<30 || max || err != nil {
		t.Errorf("number: %d %v %v", v, max, err)
	}
	if _, _, err := parseUintOrMax([]byte("maxx\n")); err == nil {
		t.Error("maxx: no error")
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8\n", "", "0-65535", "3-1", "1,2,3,4"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseCPUList(b)
		if err == nil && n > maxCPUs {
			t.Errorf("%q: %d cpus", b, n)
		}
	})
}

func FuzzKeyValue(f *testing.F) {
	f.Add([]byte("anon 5\nfile 6\n"), "anon")
	f.Add([]byte("usage_usec 99999999999999999999\n"), "usage_usec")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		keyValue(b, key)
	})
}

func FuzzParseIOStat(f *testing.F) {
	f.Add([]byte("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n"))
	f.Add([]byte("8:0 rbytes=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseIOStat(b)
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("4810 (cat) R 4800 4800 4439 0 -1 4194304 99 0 0 0 7 3 2 1 20 0 1 0 17103 3133440 413 18446744073709551615 0\n"))
	f.Add([]byte("77 ((my) x) y) S 1 77 77 0 -1 0 0 0 0 0 5 6 0 0 20 0 4 0 999 0 12 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseProcStat(b)
		if err == nil && st.State == 0 {
			t.Errorf("%q: parsed without a state", b)
		}
	})
}

func FuzzParseProcIO(f *testing.F) {
	f.Add([]byte("rchar: 1\nwchar: 0\nsyscr: 1\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseProcIO(b)
	})
}
