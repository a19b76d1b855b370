package amd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// addFixtures seeds a fuzz target with every fixture named name and a few
// hand-picked shapes.
func addFixtures(f *testing.F, name string) {
	matches, err := filepath.Glob(filepath.Join("testdata", "*", name))
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `[]`, `{}`, `null`, `"N/A"`, `[{"gpu": 0}]`, `[{"gpu": -1}]`, `[{"gpu": 1e99}]`,
		`WARNING: something\n[{"gpu": 0, "power": {"socket_power": "12 W"}}]`,
		`{"gpu_data": [{"gpu": 0, "usage": {"gfx_activity": {"value": {"value": 1}}}}]}`,
		`[{"gpu": 0, "clock": {"gfx_0": {"clk": [1]}, "mem": "N/A"}, "mem_usage": {"total_vram": true}}]`,
		`[{"gpu": 0, "process_list": [{"process_info": {"pid": 4294967296}}, 3, null]}]`,
		`[{"gpu": 0, "values": "x", "process_info": 7}]`,
		`[{"gpu": 0, "usage": {"umc_activity": {"value": 65535, "unit": "%"}, "mem_usage": 12}}]`,
		`{"xgmi_metric": [[{"gpu": 0, "link_metrics": {"links": [{"read": {"value": 18446744073709551615, "unit": "KB"}, "write": 1}]}}], 3]}`,
		`[{"gpu": 0, "link_metrics": {"links": [{"read": "1 KB", "write": {"value": -1}}, "N/A", {"read": 1e300, "write": 0}]}}]`,
	} {
		f.Add([]byte(s))
	}
}

func FuzzParseMetric(f *testing.F) {
	addFixtures(f, "metric*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		readings, err := parseMetric(data)
		if err != nil {
			return
		}
		c := newChecker(make([]devInfo, len(readings)))
		pos := 0
		for _, r := range readings {
			if r.Missing&^gpu.AllFields != 0 {
				t.Fatalf("unknown missing bits %b", r.Missing)
			}
			c.apply(pos, &r)
			if r.Has(gpu.FieldDRAMActivity) && !(r.DRAMActivity >= 0 && r.DRAMActivity <= 1) {
				t.Fatalf("memory controller activity %v kept", r.DRAMActivity)
			}
			if !r.Has(gpu.FieldDRAMActivity) && r.DRAMActivity != 0 {
				t.Fatalf("missing memory controller activity holds %v", r.DRAMActivity)
			}
			pos++
		}
	})
}

func FuzzParseXGMI(f *testing.F) {
	addFixtures(f, "xgmi*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		counters, err := parseXGMI(data)
		if err != nil {
			return
		}
		var l linkRate
		now := time.Unix(1000, 0)
		for _, c := range counters {
			if c.ok != (c.links != 0) || c.rxKB >= 64*maxLinkKB || c.txKB >= 64*maxLinkKB {
				t.Fatalf("counters %+v", c)
			}
			now = now.Add(time.Second)
			if rx, tx, ok := l.update(c, now); ok && (!plausibleLinkRate(rx) || !plausibleLinkRate(tx)) {
				t.Fatalf("rate %v %v from %+v", rx, tx, c)
			}
		}
	})
}

func FuzzParseStatic(f *testing.F) {
	addFixtures(f, "static.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		devs, err := parseStatic(data)
		if err != nil {
			return
		}
		infos := make([]devInfo, len(devs))
		for i, d := range devs {
			infos[i] = d.info
			partitionOf(d.info)
		}
		groupOf, members := powerGroups(infos)
		n := 0
		for _, m := range members {
			n += len(m)
		}
		if n != len(devs) || len(groupOf) != len(devs) {
			t.Fatalf("power groups cover %d of %d devices", n, len(devs))
		}
	})
}

func FuzzParseProcess(f *testing.F) {
	addFixtures(f, "process.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		lists, err := parseProcesses(data)
		if err != nil {
			return
		}
		for _, procs := range lists {
			for _, p := range procs {
				if p.PID == 0 || (!p.MemoryKnown && p.MemoryBytes != 0) {
					t.Fatalf("bad process %+v", p)
				}
			}
		}
	})
}

func FuzzParseList(f *testing.F) {
	addFixtures(f, "list.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseList(data)
	})
}

func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"123 W", "45%", "N/A", "1e3MHz", "-0", "0x10", "1.5 GiB", "\u00b0C", "1e309"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := parseQuantityString(s)
		for _, table := range []map[string]float64{powerUnits, energyUnits, tempUnits, clockUnits, byteUnits, percentUnits} {
			q.in(table, "")
		}
		q.bytes("MB")
		parseHexOrDecimal(s)
		pciDevice(s)
		computeMode(s)
		parseRenderName(s)
	})
}
