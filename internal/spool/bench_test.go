package spool

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/store"
)

// BenchmarkEnqueue measures spooling one 4 KiB document (write, fsync,
// rename, directory fsync, budget check) into a spool already holding
// `held` items.
func BenchmarkEnqueue(b *testing.B) {
	body := []byte(`{"pad":"` + strings.Repeat("x", 4096) + `"}`)
	for _, held := range []int{0, 1000} {
		b.Run("held="+strconv.Itoa(held), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			for i := range held {
				if err := s.EnqueueSamples("prom", body[:100+i%100]); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if err := s.EnqueueDoc("es", store.Doc{Kind: store.KindJobDoc, Index: "jobs", ID: "c1:" + strconv.Itoa(i), Body: body}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEnqueueNodeDoc measures replacing a node document (the agent
// re-spools its node document every interval while Elasticsearch is down).
func BenchmarkEnqueueNodeDoc(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"pad":"` + strings.Repeat("x", 2048) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.EnqueueDoc("es", store.Doc{Kind: store.KindNodeDoc, Index: "nodes", ID: "c1:1:n1", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	st, _ := s.Stats()
	if st.Items != 1 {
		b.Fatalf("%d node documents spooled, want 1", st.Items)
	}
}

// BenchmarkReplay measures replaying 100 spooled documents.
func BenchmarkReplay(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"pad":"` + strings.Repeat("x", 1024) + `"}`)
	for b.Loop() {
		b.StopTimer()
		for i := range 100 {
			_ = s.EnqueueDoc("es", store.Doc{Kind: store.KindJobDoc, Index: "jobs", ID: strconv.Itoa(i), Body: body})
		}
		b.StartTimer()
		if err := s.Replay(context.Background(), func(context.Context, Item) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsEmpty is the check an agent makes before every push: is
// anything spooled (nothing, on a healthy node)?
func BenchmarkStatsEmpty(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if st, err := s.Stats(); err != nil || st.Items != 0 {
			b.Fatal(st, err)
		}
	}
}
