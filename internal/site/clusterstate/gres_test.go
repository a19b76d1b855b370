package clusterstate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseGres(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Gres
		gpus map[string]int64
	}{
		// From the test cluster's sinfo --json (testdata/sinfo-22.05.json).
		{in: "gpu:a100:2", want: []Gres{{Name: "gpu", Type: "a100", Count: 2}}, gpus: map[string]int64{"a100": 2}},
		{in: "gpu:a100:0(IDX:N/A)", want: []Gres{{Name: "gpu", Type: "a100", Count: 0, Detail: "IDX:N/A"}}, gpus: map[string]int64{"a100": 0}},
		{in: "gpu:a100:1(IDX:0)", want: []Gres{{Name: "gpu", Type: "a100", Count: 1, Detail: "IDX:0"}}, gpus: map[string]int64{"a100": 1}},
		{in: "gpu:2(IDX:0-1)", want: []Gres{{Name: "gpu", Count: 2, Detail: "IDX:0-1"}}, gpus: map[string]int64{UntypedGPU: 2}},
		// As sites' sinfo prints them.
		{in: "gpu:rtx8000:8(S:0-1)", want: []Gres{{Name: "gpu", Type: "rtx8000", Count: 8, Detail: "S:0-1"}}, gpus: map[string]int64{"rtx8000": 8}},
		{in: "gpu:a100:4(IDX:0-3)", want: []Gres{{Name: "gpu", Type: "a100", Count: 4, Detail: "IDX:0-3"}}, gpus: map[string]int64{"a100": 4}},
		{in: "gpu:2", want: []Gres{{Name: "gpu", Count: 2}}, gpus: map[string]int64{UntypedGPU: 2}},
		{in: "gpu:a100:3(IDX:0,2-3)", want: []Gres{{Name: "gpu", Type: "a100", Count: 3, Detail: "IDX:0,2-3"}}, gpus: map[string]int64{"a100": 3}},
		{in: "gpu:v100:2(S:0-1),gpu:a100:1(S:1)", want: []Gres{{Name: "gpu", Type: "v100", Count: 2, Detail: "S:0-1"}, {Name: "gpu", Type: "a100", Count: 1, Detail: "S:1"}},
			gpus: map[string]int64{"v100": 2, "a100": 1}},
		{in: "gpu:tesla:2(S:0),mps:200(S:0)", want: []Gres{{Name: "gpu", Type: "tesla", Count: 2, Detail: "S:0"}, {Name: "mps", Count: 200, Detail: "S:0"}},
			gpus: map[string]int64{"tesla": 2}},
		{in: "gpu:nvidia_a100-sxm4-80gb:8(S:0-1)", want: []Gres{{Name: "gpu", Type: "nvidia_a100-sxm4-80gb", Count: 8, Detail: "S:0-1"}}, gpus: map[string]int64{"nvidia_a100-sxm4-80gb": 8}},
		{in: "gpu:a100_3g.20gb:2,gpu:a100:1", want: []Gres{{Name: "gpu", Type: "a100_3g.20gb", Count: 2}, {Name: "gpu", Type: "a100", Count: 1}},
			gpus: map[string]int64{"a100_3g.20gb": 2, "a100": 1}},
		{in: "gpu:1080ti:4(S:0-1)", want: []Gres{{Name: "gpu", Type: "1080ti", Count: 4, Detail: "S:0-1"}}, gpus: map[string]int64{"1080ti": 4}},
		{in: "gpu:a100", want: []Gres{{Name: "gpu", Type: "a100", Count: 1}}, gpus: map[string]int64{"a100": 1}},
		{in: "shard:a100:8,bandwidth:4G", want: []Gres{{Name: "shard", Type: "a100", Count: 8}, {Name: "bandwidth", Count: 4 << 30}}},
		{in: "gpu:a100:no_consume:4", want: []Gres{{Name: "gpu", Type: "a100", Count: 4}}, gpus: map[string]int64{"a100": 4}},
		{in: "", want: nil},
		{in: "(null)", want: nil},
		{in: "N/A", want: nil},
	} {
		got, err := ParseGres(tc.in)
		if err != nil {
			t.Errorf("ParseGres(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseGres(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if g := GPUsByType(got); !reflect.DeepEqual(g, tc.gpus) {
			t.Errorf("GPUsByType(%q) = %v, want %v", tc.in, g, tc.gpus)
		}
	}
}

func TestParseGresErrors(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"gpu:a100:4(IDX:0-3":    "unbalanced '('",
		"gpu:a100:4)":           "unbalanced ')'",
		"gpu::2":                "empty field",
		"gpu:a100:2,":           "empty entry",
		",gpu:2":                "empty entry",
		"gpu:a100:x:2":          "too many fields",
		"gpu:a100:two":          `count "two" is not a number`,
		"gpu:2(S:0)x":           "text after ')'",
		"gpu:a 100:2":           "unexpected character",
		"gpu:99999999999999999": "", // not a count: a type, count 1
	} {
		_, err := ParseGres(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseGres(%q): %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in)):
			t.Errorf("ParseGres(%q) error %v, want one quoting the input and saying %q", in, err, want)
		}
	}
}

// FuzzParseGres: no input panics; what parses has sane counts and reads
// back the same when written out again.
func FuzzParseGres(f *testing.F) {
	for _, s := range []string{"gpu:a100:2", "gpu:a100:0(IDX:N/A)", "gpu:rtx8000:8(S:0-1)", "gpu:2",
		"gpu:v100:2(S:0-1),gpu:a100:1(S:1)", "gpu:a100:3(IDX:0,2-3)", "gpu:tesla:2(S:0),mps:200(S:0)", "bandwidth:4G", "(null)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGres(s)
		if err != nil {
			return
		}
		parts := make([]string, len(gs))
		for i, g := range gs {
			if g.Name == "" || g.Count < 0 || g.Count > maxGresCount {
				t.Fatalf("ParseGres(%q) entry %+v", s, g)
			}
			p := g.Name
			if g.Type != "" {
				p += ":" + g.Type
			}
			p += fmt.Sprintf(":%d", g.Count)
			if g.Detail != "" {
				p += "(" + g.Detail + ")"
			}
			parts[i] = p
		}
		for t2, n := range GPUsByType(gs) {
			if t2 == "" || n < 0 {
				t.Fatalf("ParseGres(%q): GPUs %q %d", s, t2, n)
			}
		}
		if len(gs) == 0 {
			return
		}
		again, err := ParseGres(strings.Join(parts, ","))
		if err != nil || !reflect.DeepEqual(again, gs) {
			t.Fatalf("ParseGres(%q) = %+v; written out %q reads back %+v, %v", s, gs, strings.Join(parts, ","), again, err)
		}
	})
}
