package jobmodel

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Default index names; both are configurable in the agent and the plugin.
const (
	DefaultJobIndex  = "jobsight-jobs"
	DefaultNodeIndex = "jobsight-nodes"
)

// keywordIgnoreAbove keeps very long strings (a 10 KB job name) stored but
// unindexed, so they never make a document fail to index.
const keywordIgnoreAbove = 1024

// JobMapping returns the explicit Elasticsearch mapping of the job index.
func JobMapping() []byte { return mustMapping(reflect.TypeOf(Job{})) }

// NodeMapping returns the explicit Elasticsearch mapping of the node index.
func NodeMapping() []byte { return mustMapping(reflect.TypeOf(Node{})) }

// MappingProperties returns the property tree of a document type, derived
// from its Go fields so that the mapping and the documents cannot drift.
func MappingProperties(t reflect.Type) map[string]any {
	props := map[string]any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			for k, v := range MappingProperties(f.Type) {
				props[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		props[name] = fieldMapping(f.Type)
	}
	return props
}

var timeType = reflect.TypeOf(Time{})

func fieldMapping(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "date"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "keyword", "ignore_above": keywordIgnoreAbove}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return map[string]any{"type": "long"}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "double"}
	case reflect.Struct:
		return map[string]any{"properties": MappingProperties(t)}
	}
	panic(fmt.Sprintf("jobmodel: no mapping for Go type %s", t))
}

func mustMapping(t reflect.Type) []byte {
	b, err := json.Marshal(map[string]any{
		"settings": map[string]any{"number_of_shards": 1},
		"mappings": map[string]any{
			"dynamic":    "strict",
			"properties": MappingProperties(t),
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}
