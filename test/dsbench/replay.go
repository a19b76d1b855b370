package dsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jobsight/jobsight/internal/textfmt"
)

// Recorder is a reverse proxy in front of the seeded Elasticsearch and
// Prometheus that keeps every answer, in order, with its request's path
// and shape (RequestShape): paths under /es/ go to Elasticsearch, the
// others to Prometheus. A datasource pointed at URL()+"/es" and URL()
// sends its requests through it.
type Recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen Recording
}

// NewRecorder starts a recorder for the env's servers. Close it.
func NewRecorder(e *Env) (*Recorder, error) {
	esU, err := url.Parse(e.ESURL())
	if err != nil {
		return nil, err
	}
	promU, err := url.Parse(e.PromURL())
	if err != nil {
		return nil, err
	}
	esU.Path, promU.Path = "", ""
	rec := &Recorder{}
	esP, promP := httputil.NewSingleHostReverseProxy(esU), httputil.NewSingleHostReverseProxy(promU)
	capture := func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		req, _ := resp.Request.Context().Value(startKey{}).(reqInfo)
		rec.mu.Lock()
		rec.seen = append(rec.seen, Answer{Path: resp.Request.URL.Path, Shape: req.shape, Body: body,
			Encoding: resp.Header.Get("Content-Encoding"), Took: time.Since(req.start)})
		rec.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	esP.ModifyResponse, promP.ModifyResponse = capture, capture
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		info := reqInfo{start: time.Now(), shape: RequestShape(r.URL.RawQuery, body)}
		r = r.WithContext(context.WithValue(r.Context(), startKey{}, info))
		if strings.HasPrefix(r.URL.Path, "/es/") {
			esP.ServeHTTP(w, r)
			return
		}
		promP.ServeHTTP(w, r)
	}))
	return rec, nil
}

// URL is the recorder's base URL.
func (r *Recorder) URL() string { return r.srv.URL }

// Take returns the answers recorded since the last Take and forgets them.
func (r *Recorder) Take() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// Close stops the recorder.
func (r *Recorder) Close() { r.srv.Close() }

type startKey struct{}

type reqInfo struct {
	start time.Time
	shape string
}

// RequestShape is a request's query string and body with every run of
// digits replaced by one 0: what tells a panel's requests to one path
// apart (an aggregation from a search for documents, one sort from
// another) while the times and ids in them change from run to run.
func RequestShape(rawQuery string, body []byte) string {
	var b strings.Builder
	digits := false
	for _, c := range rawQuery + "\x00" + string(body) {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('0')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
	}
	return b.String()
}

// Answer is one recorded answer: the request's path and shape, the body
// as sent (compressed when the server compressed it), and how long the
// server took to send it all.
type Answer struct {
	Path     string
	Shape    string
	Body     []byte
	Encoding string
	Took     time.Duration
}

// Recording is a panel's answers in the order its requests were answered.
type Recording []Answer

// Bytes is the size of the recorded bodies as sent.
func (rc Recording) Bytes() int {
	n := 0
	for _, a := range rc {
		n += len(a.Body)
	}
	return n
}

// Describe lists the recorded paths, sizes and server times.
func (rc Recording) Describe() string {
	var parts []string
	for _, a := range rc {
		enc := ""
		if a.Encoding != "" {
			enc = " " + a.Encoding
		}
		parts = append(parts, fmt.Sprintf("%s %s%s in %s", a.Path, textfmt.Bytes(len(a.Body)), enc, a.Took.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// Replayer answers each request with a recorded answer and does no other
// work: it stands in for Elasticsearch and Prometheus when measuring the
// plugin's own share. A request gets the answers recorded for its path and
// shape (for its path alone when no shape matches: a recording without
// shapes), in turn: the k-th such request the k-th (modulo their number),
// so a panel run again and again gets, request by request, what it got
// when recorded.
type Replayer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	rec  Recording
	next map[string]int
}

// NewReplayer starts a replayer with nothing to answer yet. Close it.
func NewReplayer() *Replayer {
	rp := &Replayer{}
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a, ok := rp.pick(r.URL.Path, RequestShape(r.URL.RawQuery, body))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if a.Encoding != "" {
			w.Header().Set("Content-Encoding", a.Encoding)
		}
		_, _ = w.Write(a.Body)
	}))
	return rp
}

func (rp *Replayer) pick(path, shape string) (Answer, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	var same, onPath []int
	for i, a := range rp.rec {
		if a.Path != path {
			continue
		}
		onPath = append(onPath, i)
		if a.Shape == shape {
			same = append(same, i)
		}
	}
	key := path + "\x00" + shape
	if len(same) == 0 {
		same, key = onPath, path
	}
	if len(same) == 0 {
		return Answer{}, false
	}
	k := rp.next[key]
	rp.next[key] = k + 1
	return rp.rec[same[k%len(same)]], true
}

// Use makes the replayer answer from rc, from its first answers on.
func (rp *Replayer) Use(rc Recording) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.rec, rp.next = rc, map[string]int{}
}

// URL is the replayer's base URL (Elasticsearch at URL()+"/es").
func (rp *Replayer) URL() string { return rp.srv.URL }

// Close stops the replayer.
func (rp *Replayer) Close() { rp.srv.Close() }

// recordingIndex names the file that lists a saved recording's answers.
const recordingIndex = "answers.json"

// savedAnswer is an answer's entry in recordingIndex.
type savedAnswer struct {
	Path     string `json:"path"`
	Shape    string `json:"shape"`
	File     string `json:"file"`
	Encoding string `json:"encoding,omitempty"`
	TookMs   int64  `json:"tookMs"`
}

// Save writes the recording under dir: one file per answer (its number
// and the path escaped; ".gzip" added when the body is gzip-compressed as
// sent) and answers.json listing them in order with their paths and
// shapes.
func (rc Recording) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	index := make([]savedAnswer, 0, len(rc))
	for i, a := range rc {
		name := fmt.Sprintf("%02d-%s", i, url.PathEscape(a.Path))
		if a.Encoding != "" {
			name += "." + a.Encoding
		}
		if err := os.WriteFile(filepath.Join(dir, name), a.Body, 0o644); err != nil {
			return err
		}
		index = append(index, savedAnswer{Path: a.Path, Shape: a.Shape, File: name, Encoding: a.Encoding, TookMs: a.Took.Milliseconds()})
	}
	raw, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, recordingIndex), raw, 0o644)
}

// LoadRecording reads a recording Save wrote. A directory without
// answers.json (saved before it existed: one answer per path, the last)
// is read as one answer per file.
func LoadRecording(dir string) (Recording, error) {
	var rc Recording
	if raw, err := os.ReadFile(filepath.Join(dir, recordingIndex)); err == nil {
		var index []savedAnswer
		if err := json.Unmarshal(raw, &index); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, recordingIndex), err)
		}
		for _, e := range index {
			b, err := os.ReadFile(filepath.Join(dir, filepath.Base(e.File)))
			if err != nil {
				return nil, err
			}
			rc = append(rc, Answer{Path: e.Path, Shape: e.Shape, Body: b, Encoding: e.Encoding, Took: time.Duration(e.TookMs) * time.Millisecond})
		}
	} else {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			name, enc := e.Name(), ""
			if n, ok := strings.CutSuffix(name, ".gzip"); ok {
				name, enc = n, "gzip"
			}
			p, err := url.PathUnescape(name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			rc = append(rc, Answer{Path: p, Body: b, Encoding: enc})
		}
	}
	if len(rc) == 0 {
		return nil, fmt.Errorf("%s holds no recorded answers", dir)
	}
	return rc, nil
}
