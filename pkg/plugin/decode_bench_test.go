package plugin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	gojson "github.com/goccy/go-json"
	jsoniter "github.com/json-iterator/go"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/plugin"
)

// BenchmarkSearchDecode isolates where the plugin's own share goes for
// 10,000 jobs: decoding the Elasticsearch answer into jobmodel.Job values.
// "plugin_decodeJobs" is what pkg/plugin's fetchJobs does now (decodeJobs:
// goccy/go-json, one pass, the same as gojson_one_pass);
// "std_rawmessage_then_each" is what it did before (json.Unmarshal into
// hits with a json.RawMessage _source, then json.Unmarshal of each
// _source); the others are the alternatives that were compared. It reads
// the answer an earlier BenchmarkDatasource saved (JOBSIGHT_DSBENCH_SAVE):
//
//	JOBSIGHT_DSBENCH_REPLAY=/tmp/dsbench go test -run '^$' -bench SearchDecode -benchmem ./pkg/plugin/
func BenchmarkSearchDecode(b *testing.B) {
	dir := os.Getenv(envReplay)
	if dir == "" {
		b.Skip("set " + envReplay + " to a directory saved with " + envSave)
	}
	body, err := os.ReadFile(filepath.Join(dir, "jobs_10000", "%2Fes%2Fjobsight-jobs%2F_search"))
	if err != nil {
		b.Fatal(err)
	}
	type rawHits struct {
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
		Aggregations map[string]json.RawMessage `json:"aggregations"`
	}
	type typedHits struct {
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
			Hits []struct {
				ID     string       `json:"_id"`
				Source jobmodel.Job `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	twoPass := func(unmarshal func([]byte, any) error) func() (int, error) {
		return func() (int, error) {
			var ans rawHits
			if err := unmarshal(body, &ans); err != nil {
				return 0, err
			}
			jobs := make([]jobmodel.Job, 0, len(ans.Hits.Hits))
			for _, h := range ans.Hits.Hits {
				var j jobmodel.Job
				if err := unmarshal(h.Source, &j); err != nil {
					continue
				}
				jobs = append(jobs, j)
			}
			return len(jobs), nil
		}
	}
	onePass := func(unmarshal func([]byte, any) error) func() (int, error) {
		return func() (int, error) {
			var ans typedHits
			if err := unmarshal(body, &ans); err != nil {
				return 0, err
			}
			jobs := make([]jobmodel.Job, 0, len(ans.Hits.Hits))
			for i := range ans.Hits.Hits {
				jobs = append(jobs, ans.Hits.Hits[i].Source)
			}
			return len(jobs), nil
		}
	}
	cases := []struct {
		name string
		run  func() (int, error)
	}{
		{"plugin_decodeJobs", func() (int, error) {
			jobs, _, _, err := plugin.DecodeJobs(body)
			return len(jobs), err
		}},
		{"std_rawmessage_then_each", twoPass(json.Unmarshal)},
		{"std_one_pass", onePass(json.Unmarshal)},
		{"std_decoder_stream_per_hit", func() (int, error) { return streamHits(body) }},
		{"jsoniter_rawmessage_then_each", twoPass(jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal)},
		{"jsoniter_one_pass", onePass(jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal)},
		{"gojson_rawmessage_then_each", twoPass(gojson.Unmarshal)},
		{"gojson_one_pass", onePass(gojson.Unmarshal)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var n int
			for i := 0; i < b.N; i++ {
				if n, err = c.run(); err != nil {
					b.Fatal(err)
				}
			}
			if n != 10000 {
				b.Fatalf("decoded %d jobs, want 10000", n)
			}
		})
	}
}

// streamHits walks hits.hits with a json.Decoder and decodes each _source
// on its own: one scan of the input instead of json.Unmarshal's validation
// pass plus decode (twice), and a document that does not fit the type
// (UnmarshalTypeError) is skipped without failing the others.
func streamHits(body []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var jobs []jobmodel.Job
	// Find "hits" → "hits" → [.
	depth := 0
	inHits := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && t == "hits" {
				inHits = true
			} else if inHits && depth == 2 && t == "hits" {
				if _, err := dec.Token(); err != nil { // [
					return 0, err
				}
				for dec.More() {
					var h struct {
						ID     string       `json:"_id"`
						Source jobmodel.Job `json:"_source"`
					}
					if err := dec.Decode(&h); err != nil {
						var te *json.UnmarshalTypeError
						if errors.As(err, &te) {
							continue
						}
						return 0, err
					}
					jobs = append(jobs, h.Source)
				}
				return len(jobs), nil
			}
		}
	}
	return len(jobs), nil
}
