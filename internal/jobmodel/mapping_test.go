package jobmodel

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fieldPaths lists the dotted paths of every leaf in a property tree.
func fieldPaths(prefix string, props map[string]any) []string {
	var out []string
	for name, v := range props {
		m := v.(map[string]any)
		if sub, ok := m["properties"].(map[string]any); ok {
			out = append(out, fieldPaths(prefix+name+".", sub)...)
			continue
		}
		out = append(out, prefix+name)
	}
	sort.Strings(out)
	return out
}

func TestMappingsAreStrictAndTyped(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string][]byte{"job": JobMapping(), "node": NodeMapping(), "result": ResultMapping(), "history": HistoryMapping()} {
		var m struct {
			Mappings struct {
				Dynamic    string                    `json:"dynamic"`
				Properties map[string]map[string]any `json:"properties"`
			} `json:"mappings"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s mapping: %v", name, err)
		}
		if m.Mappings.Dynamic != "strict" {
			t.Errorf("%s mapping: dynamic = %q, want strict", name, m.Mappings.Dynamic)
		}
		for field, want := range map[string]string{"submit_time": "date", "job_id": "keyword", "final": "boolean", "cluster": "keyword"} {
			if p, ok := m.Mappings.Properties[field]; ok && p["type"] != want {
				t.Errorf("%s mapping: %s is %v, want %s", name, field, p["type"], want)
			}
		}
	}
}

// Every mapped field is in the user-facing field reference, so a field
// cannot be added without documenting it.
func TestFieldReferenceDocumentsEveryField(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/fields.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, typ := range []reflect.Type{reflect.TypeOf(Job{}), reflect.TypeOf(Node{}), reflect.TypeOf(Result{}), reflect.TypeOf(History{})} {
		for _, path := range fieldPaths("", MappingProperties(typ)) {
			leaf := path[strings.LastIndex(path, ".")+1:]
			if !strings.Contains(text, "`"+path+"`") && !strings.Contains(text, "`"+leaf+"`") &&
				!strings.Contains(text, "`"+strings.SplitN(path, ".", 2)[0]+".*`") {
				t.Errorf("%s field %s is not in docs/fields.md", typ.Name(), path)
			}
		}
	}
}

func TestAbsentMetricsAreNotZeroFilled(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Job{DocID: "c:1", Cluster: "c", JobID: "1", State: StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"cpu"`, `"memory"`, `"io"`, `"exit_code"`, `"end_time"`} {
		if strings.Contains(string(b), f) {
			t.Errorf("empty job document contains %s: %s", f, b)
		}
	}
	b, _ = json.Marshal(Job{Usage: Usage{IO: &IOUsage{ReadBytes: Ptr[int64](0)}}})
	if !strings.Contains(string(b), `"read_bytes":0`) {
		t.Errorf("a measured zero must be kept: %s", b)
	}
}
