package amd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

func TestLinkRate(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	c := func(rx, tx uint64, links uint64) xgmiCounters {
		return xgmiCounters{rxKB: rx, txKB: tx, links: links, ok: true}
	}
	var l linkRate
	steps := []struct {
		name   string
		c      xgmiCounters
		t      float64
		rx, tx float64
		ok     bool
	}{
		{"first read: no reference", c(1000, 2000, 0x7f), 0, 0, 0, false},
		{"too soon: missing, reference kept", c(1001, 2001, 0x7f), 0.1, 0, 0, false},
		{"rate since the first read", c(3000, 2000, 0x7f), 2, 1000 * 1024, 0, true},
		{"counters not read: reference kept", xgmiCounters{}, 3, 0, 0, false},
		{"rate over the longer window", c(7000, 6000, 0x7f), 4, 2000 * 1024, 2000 * 1024, true},
		{"a link dropped out: new reference", c(6000, 5000, 0x3f), 5, 0, 0, false},
		{"same links again", c(6000, 5000, 0x3f), 6, 0, 0, true},
		{"counter went backwards (driver reload)", c(10, 10, 0x3f), 7, 0, 0, false},
		{"recovers from the new reference", c(1034, 10, 0x3f), 8, 1024 * 1024, 0, true},
		{"clock went backwards", c(2000, 20, 0x3f), 7.5, 0, 0, false},
		{"implausible (> 10 TB/s)", c(2000+20e9, 20, 0x3f), 8.5, 0, 0, false},
		// Nobody read the device for ten minutes (no job on it, or the
		// agent stopped): no rate over that time, which may be another
		// job's traffic.
		{"after a pause: new reference", c(2000+21e9, 20, 0x3f), 608.5, 0, 0, false},
		{"rate after the pause", c(2000+21e9+1024, 20, 0x3f), 609.5, 1024 * 1024, 0, true},
	}
	for _, s := range steps {
		rx, tx, ok := l.update(s.c, at(s.t))
		if ok != s.ok || (ok && (!approx(rx, s.rx) || !approx(tx, s.tx))) {
			t.Errorf("%s: %v %v %v, want %v %v %v", s.name, rx, tx, ok, s.rx, s.tx, s.ok)
		}
	}
}

func TestXGMICounters(t *testing.T) {
	var c xgmiCounters
	c.addRaw(0, 100, 200)
	c.addRaw(1, ^uint64(0), 5) // "not supported" in one direction: link left out
	c.add(2, 1e19, 1)          // a sum holding UINT64_MAX (amd-smi 7.x)
	c.add(3, 1.5, 1)           // not a counter
	c.add(64, 1, 1)            // beyond the link mask
	c.add(5, 50, 0)
	if !c.ok || c.rxKB != 150 || c.txKB != 200 || c.links != 1|1<<5 {
		t.Errorf("%+v", c)
	}
	var none xgmiCounters
	for i := range xgmiLinks {
		none.addRaw(i, ^uint64(0), ^uint64(0))
	}
	if none.ok {
		t.Error("all links UINT64_MAX gave counters")
	}
}

func TestParseXGMI(t *testing.T) {
	// amd-smi 6.1–6.3: a list; the GPU itself "N/A", a link the library
	// has no value for {"value": "N/A", "unit": "KB"}.
	v62 := `[
    {"gpu": 0, "bdf": "0000:0c:00.0", "link_metrics": {"bit_rate": {"value": 32, "unit": "Gb/s"},
        "max_bandwidth": {"value": 512, "unit": "Gb/s"}, "link_type": "XGMI", "links": [
        {"gpu": 0, "bdf": "0000:0c:00.0", "read": "N/A", "write": "N/A"},
        {"gpu": 1, "bdf": "0000:22:00.0", "read": {"value": 1500, "unit": "KB"}, "write": {"value": 700, "unit": "KB"}},
        {"gpu": 2, "bdf": "0000:38:00.0", "read": {"value": "N/A", "unit": "KB"}, "write": {"value": "N/A", "unit": "KB"}}]}},
    {"gpu": 1, "bdf": "0000:22:00.0", "link_metrics": {"bit_rate": "N/A", "max_bandwidth": "N/A", "link_type": "N/A",
        "links": []}}
]`
	got, err := parseXGMI([]byte(v62))
	if err != nil {
		t.Fatal(err)
	}
	if c := got[0]; !c.ok || c.rxKB != 1500 || c.txKB != 700 || c.links != 1<<1 {
		t.Errorf("GPU 0: %+v", c)
	}
	if c, found := got[1]; !found || c.ok {
		t.Errorf("GPU 1: %+v %v", c, found)
	}
	// amd-smi 7.x: {"xgmi_metric": [[…]]}, raw UINT64_MAX passed through.
	v7 := `{"xgmi_metric": [[{"gpu": 3, "bdf": "0000:5c:00.0", "link_metrics": {"links": [
        {"gpu": 0, "bdf": "0000:0c:00.0", "read": {"value": 18446744073709551615, "unit": "KB"},
         "write": {"value": 18446744073709551615, "unit": "KB"}},
        {"gpu": 1, "bdf": "0000:22:00.0", "read": {"value": 42, "unit": "KB"}, "write": {"value": 43, "unit": "KB"}}]}}]]}`
	got, err = parseXGMI([]byte(v7))
	if err != nil {
		t.Fatal(err)
	}
	if c := got[3]; !c.ok || c.rxKB != 42 || c.txKB != 43 || c.links != 1<<1 {
		t.Errorf("7.x GPU 3: %+v", c)
	}
	for _, bad := range []struct{ in, want string }{
		{`Traceback (most recent call last):`, "amd-smi xgmi: output is not JSON"},
		{`{"xgmi_metric": 3}`, `"xgmi_metric" is 3, want a list`},
		{`{"link_status": []}`, `without "gpu" or "xgmi_metric"`},
		{`[[{"gpu": "x"}]]`, `amd-smi xgmi: malformed JSON: entry 0: "gpu" is "x"`},
	} {
		if _, err := parseXGMI([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("parseXGMI(%s): %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestCLIXGMIRates(t *testing.T) {
	f := newFakeCLI(t, "mi300x")
	f.xgmi = []string{"xgmi.json", "xgmi-2.json"}
	b := openFake(t, f)
	devs := b.Devices()
	if len(devs) != 8 || devs[0].Partition != "" || devs[7].Minor != 135 || devs[0].MemoryTotalBytes != 196592*mib {
		t.Fatalf("devices %+v", devs)
	}
	// The first pass, 2 s after open: GPUs 0–3 exchanged 78125000 KB per
	// link with each other, every other link 1 KB.
	f.t = f.t.Add(2 * time.Second)
	got := readAll(t, b)
	job := (3*78_125_000 + 4) * 1024 / 2.0
	idle := 7 * 1024 / 2.0
	checkReading(t, "GPU 0", got[0], want{util: 0.96, used: 151200 * mib, total: 196592 * mib, watts: 652,
		joules: 4.0e7 + 0.25, celsius: 71, smHz: 2100e6, memHz: 1300e6, dram: 0.38, rx: job, tx: job})
	checkReading(t, "GPU 4", got[4], want{util: 0, used: 283 * mib, total: 196592 * mib, watts: 141,
		joules: 4.6e7 + 0.25, celsius: 39, smHz: 132e6, memHz: 1300e6, dram: 0, rx: idle, tx: idle})
	// 2 s later, nothing moved (xgmi-2.json again): 0 B/s, measured.
	f.t = f.t.Add(2 * time.Second)
	got = readAll(t, b)
	if !got[1].Has(gpu.FieldLink) || got[1].LinkRxBytesPerSecond != 0 {
		t.Errorf("pass 2, GPU 1: %v (missing %v)", got[1].LinkRxBytesPerSecond, got[1].Missing)
	}
	// One xgmi command per pass.
	if f.calls["xgmi"] != 3 || f.calls["metric"] != 3 {
		t.Errorf("%d xgmi and %d metric commands for open + 2 passes", f.calls["xgmi"], f.calls["metric"])
	}
}

func TestCLIXGMIFailure(t *testing.T) {
	f := newFakeCLI(t, "mi300x")
	f.xgmi = []string{"xgmi.json", "xgmi-2.json"}
	b := openFake(t, f)
	// A pass whose xgmi command fails: links missing, the rest is read.
	f.fail["xgmi"] = errors.New("exit status 1: AmdSmiLibraryException")
	f.t = f.t.Add(2 * time.Second)
	got := readAll(t, b)
	if got[0].Has(gpu.FieldLink) || !got[0].Has(gpu.FieldUtilization|gpu.FieldDRAMActivity) {
		t.Errorf("failing xgmi: missing %v", got[0].Missing)
	}
	// The next pass: the rate since open (4 s), the open's counters having
	// stayed the reference.
	delete(f.fail, "xgmi")
	f.t = f.t.Add(2 * time.Second)
	got = readAll(t, b)
	if want := (3*78_125_000 + 4) * 1024 / 4.0; !got[0].Has(gpu.FieldLink) || !approx(got[0].LinkRxBytesPerSecond, want) {
		t.Errorf("after recovery: %v, want %v (missing %v)", got[0].LinkRxBytesPerSecond, want, got[0].Missing)
	}
	// Malformed output: missing too, no error.
	f.files["xgmi-3.json"] = []byte("Traceback (most recent call last):\n  IndexError: list index out of range\n")
	f.xgmi = append(f.xgmi, "xgmi-3.json")
	f.t = f.t.Add(2 * time.Second)
	got = readAll(t, b)
	if got[0].Has(gpu.FieldLink) {
		t.Error("malformed xgmi output gave links")
	}
}

func TestCLIXGMIAbsent(t *testing.T) {
	// No counters at open (an MI250X: all "N/A"; a tool without the
	// subcommand: na) → amd-smi xgmi is never run again.
	for _, dir := range []string{"mi250x", "na", "mi300x-cpx"} {
		f := newFakeCLI(t, dir)
		b := openFake(t, f)
		for range 3 {
			f.t = f.t.Add(2 * time.Second)
			for i, r := range readAll(t, b) {
				if r.Has(gpu.FieldLink) {
					t.Errorf("%s GPU %d: links %v", dir, i, r.LinkRxBytesPerSecond)
				}
			}
		}
		if f.calls["xgmi"] != 1 {
			t.Errorf("%s: %d xgmi commands, want 1", dir, f.calls["xgmi"])
		}
	}
}
