package dsbench

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReplayerAnswersEachRequestItsOwn checks that a panel's requests to
// one path get their own recorded answers: by shape (the aggregation and
// the search for documents on one _search path), in turn among requests
// of the same shape (pages), again from the first on each Use, and by
// path alone for a recording without shapes. Before, the last answer per
// path answered every request to it.
func TestReplayerAnswersEachRequestItsOwn(t *testing.T) {
	rp := NewReplayer()
	defer rp.Close()
	agg := `{"size":0,"aggs":{"g":{"terms":{"field":"account"}}},"query":{"range":{"end_time":{"gte":1700000000000}}}}`
	docs := `{"size":100,"query":{"term":{"final":false}},"from":0}`
	page := func(after int) string { return `{"size":10000,"search_after":[` + strings.Repeat("9", after) + `]}` }
	rc := Recording{
		{Path: "/es/jobs/_search", Shape: RequestShape("", []byte(docs)), Body: []byte("docs")},
		{Path: "/es/jobs/_search", Shape: RequestShape("", []byte(agg)), Body: []byte("agg")},
		{Path: "/es/_search", Shape: RequestShape("", []byte(page(3))), Body: []byte("page1")},
		{Path: "/es/_search", Shape: RequestShape("", []byte(page(5))), Body: []byte("page2")},
		{Path: "/api/v1/query", Body: []byte("series")},
	}
	ask := func(path, body string) string {
		t.Helper()
		resp, err := http.Post(rp.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return string(b)
	}
	for run := 0; run < 2; run++ {
		rp.Use(rc)
		// Other times and ids than recorded: the same shapes.
		got := []string{
			ask("/es/jobs/_search", strings.ReplaceAll(docs, "100", "250")),
			ask("/es/jobs/_search", strings.ReplaceAll(agg, "1700000000000", "1800000000000")),
			ask("/es/_search", page(4)),
			ask("/es/_search", page(7)),
			ask("/api/v1/query", "query=up&time=123"),
			ask("/es/other/_search", docs),
		}
		want := []string{"docs", "agg", "page1", "page2", "series", "404 Not Found"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("run %d: answers %v, want %v", run, got, want)
		}
	}
	if RequestShape("a=1", []byte(`{"t":[2026,11,26]}`)) != `a=0`+"\x00"+`{"t":[0,0,0]}` {
		t.Errorf("shape %q", RequestShape("a=1", []byte(`{"t":[2026,11,26]}`)))
	}
}
