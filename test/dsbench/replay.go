package dsbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobsight/jobsight/internal/textfmt"
)

// Recorder is a reverse proxy in front of the seeded Elasticsearch and
// Prometheus that keeps the last answer body per path: paths under /es/
// go to Elasticsearch, the others to Prometheus. A datasource pointed at
// URL()+"/es" and URL() sends its requests through it.
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
	rec := &Recorder{seen: Recording{}}
	esP, promP := httputil.NewSingleHostReverseProxy(esU), httputil.NewSingleHostReverseProxy(promU)
	capture := func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		took, _ := resp.Request.Context().Value(startKey{}).(time.Time)
		rec.mu.Lock()
		rec.seen[resp.Request.URL.Path] = Answer{Body: body, Encoding: resp.Header.Get("Content-Encoding"), Took: time.Since(took)}
		rec.mu.Unlock()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	esP.ModifyResponse, promP.ModifyResponse = capture, capture
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), startKey{}, time.Now()))
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
	r.seen = Recording{}
	return out
}

// Close stops the recorder.
func (r *Recorder) Close() { r.srv.Close() }

type startKey struct{}

// Answer is one recorded answer: its body as sent (compressed when the
// server compressed it), and how long the server took to send it all.
type Answer struct {
	Body     []byte
	Encoding string
	Took     time.Duration
}

// Recording is the answer per request path.
type Recording map[string]Answer

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
	for p, a := range rc {
		enc := ""
		if a.Encoding != "" {
			enc = " " + a.Encoding
		}
		parts = append(parts, fmt.Sprintf("%s %s%s in %s", p, textfmt.Bytes(len(a.Body)), enc, a.Took.Round(time.Millisecond)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Replayer answers every request with the recorded body for its path and
// does no other work: it stands in for Elasticsearch and Prometheus when
// measuring the plugin's own share.
type Replayer struct {
	srv *httptest.Server
	rec atomic.Pointer[Recording]
}

// NewReplayer starts a replayer with nothing to answer yet. Close it.
func NewReplayer() *Replayer {
	rp := &Replayer{}
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rc := rp.rec.Load()
		if rc == nil {
			http.NotFound(w, r)
			return
		}
		a, ok := (*rc)[r.URL.Path]
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

// Use makes the replayer answer from rc.
func (rp *Replayer) Use(rc Recording) { rp.rec.Store(&rc) }

// URL is the replayer's base URL (Elasticsearch at URL()+"/es").
func (rp *Replayer) URL() string { return rp.srv.URL }

// Close stops the replayer.
func (rp *Replayer) Close() { rp.srv.Close() }

// Save writes the recording under dir, one file per path (the path
// escaped; ".gzip" added when the body is gzip-compressed as sent).
func (rc Recording) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, a := range rc {
		name := url.PathEscape(p)
		if a.Encoding != "" {
			name += "." + a.Encoding
		}
		if err := os.WriteFile(filepath.Join(dir, name), a.Body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LoadRecording reads a recording Save wrote.
func LoadRecording(dir string) (Recording, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rc := Recording{}
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
		rc[p] = Answer{Body: b, Encoding: enc}
	}
	if len(rc) == 0 {
		return nil, fmt.Errorf("%s holds no recorded answers", dir)
	}
	return rc, nil
}
