package amd

import (
	"os"
	"path/filepath"
	"testing"

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
			pos++
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
