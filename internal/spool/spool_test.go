package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/store"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openTest(t *testing.T, dir string, maxBytes int64) *Spool {
	t.Helper()
	s, err := Open(dir, Options{MaxBytes: maxBytes, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replayAll replays everything and returns the items in order.
func replayAll(t *testing.T, s *Spool) []Item {
	t.Helper()
	var got []Item
	if err := s.Replay(context.Background(), func(_ context.Context, it Item) error {
		got = append(got, it)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func describe(items []Item) string {
	var parts []string
	for _, it := range items {
		if it.Kind == store.KindSamples {
			parts = append(parts, fmt.Sprintf("samples(%s:%s)", it.Target, it.Body))
		} else {
			parts = append(parts, fmt.Sprintf("%s(%s/%s:%s)", it.Kind.String(), it.Index, it.ID, it.Body))
		}
	}
	return strings.Join(parts, " ")
}

func jobDoc(id, body string) store.Doc {
	return store.Doc{Kind: store.KindJobDoc, Index: "jobs", ID: id, Body: []byte(body)}
}

func nodeDoc(id, body string) store.Doc {
	return store.Doc{Kind: store.KindNodeDoc, Index: "nodes", ID: id, Body: []byte(body)}
}

func TestReplayDeliversOldestFirstAndEmptiesTheSpool(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), 0)
	must(t, s.EnqueueDoc("es", jobDoc("c1:1", `{"a":1}`)))
	must(t, s.EnqueueSamples("prom", []byte("batch1")))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:1:n1", `{"n":1}`)))
	must(t, s.EnqueueSamples("prom", []byte("batch2")))

	st, err := s.Stats()
	must(t, err)
	if st.Items != 4 || st.ItemsByKind[store.KindSamples] != 2 || st.Bytes == 0 {
		t.Errorf("stats before replay %+v, want 4 items, 2 sample batches", st)
	}
	got := describe(replayAll(t, s))
	want := `job_document(jobs/c1:1:{"a":1}) samples(prom:batch1) node_document(nodes/c1:1:n1:{"n":1}) samples(prom:batch2)`
	if got != want {
		t.Errorf("replayed\n %s\nwant\n %s", got, want)
	}
	st, err = s.Stats()
	must(t, err)
	if st.Items != 0 || st.Bytes != 0 || st.Replayed != 4 {
		t.Errorf("stats after replay %+v, want empty with 4 replayed", st)
	}
	if again := replayAll(t, s); len(again) != 0 {
		t.Errorf("second replay gave %s, want nothing", describe(again))
	}
}

func TestItemIsRemovedOnlyAfterTheCallbackSucceeds(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), 0)
	for i := range 3 {
		must(t, s.EnqueueDoc("es", jobDoc("c1:"+strconv.Itoa(i), "{}")))
	}
	sinkDown := errors.New("connection refused")
	calls := 0
	err := s.Replay(context.Background(), func(_ context.Context, it Item) error {
		calls++
		if it.ID == "c1:1" {
			return sinkDown
		}
		return nil
	})
	if !errors.Is(err, sinkDown) || !strings.Contains(err.Error(), ".item") {
		t.Fatalf("Replay: %v; want the callback's error naming the file", err)
	}
	if calls != 2 {
		t.Errorf("callback called %d times, want 2 (the replay stops at the failure)", calls)
	}
	if got := describe(replayAll(t, s)); got != `job_document(jobs/c1:1:{}) job_document(jobs/c1:2:{})` {
		t.Errorf("left after the failure: %s; want c1:1 and c1:2", got)
	}
}

func TestKeepAndReject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openTest(t, dir, 0)
	must(t, s.EnqueueSamples("prom", []byte("b1")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:1", "{}")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:2", "{}")))
	err := s.Replay(context.Background(), func(_ context.Context, it Item) error {
		switch {
		case it.Target == "prom":
			return fmt.Errorf("prometheus down: %w", ErrKeep)
		case it.ID == "c1:1":
			return fmt.Errorf("mapping conflict: %w", ErrReject)
		}
		return nil
	})
	must(t, err)
	if got := describe(replayAll(t, s)); got != "samples(prom:b1)" {
		t.Errorf("left: %s; want only the kept sample batch", got)
	}
	rejected, _ := filepath.Glob(filepath.Join(dir, "rejected", "*.item"))
	st, _ := s.Stats()
	if len(rejected) != 1 || st.Rejected != 1 || st.RejectedFiles != 1 {
		t.Errorf("rejected/ holds %v, stats %+v; want the rejected document there", rejected, st)
	}

	// Restore moves it back, in its place, for the next replay.
	n, err := s.Restore()
	if err != nil || n != 1 {
		t.Fatalf("Restore: %d, %v; want 1", n, err)
	}
	if st, _ := s.Stats(); st.RejectedFiles != 0 || st.Items != 1 {
		t.Errorf("after Restore: %+v", st)
	}
	if got := describe(replayAll(t, s)); !strings.Contains(got, "c1:1") {
		t.Errorf("restored item replayed as %s", got)
	}
}

func TestNodeDocSupersedesOlderVersions(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), 0)
	must(t, s.EnqueueDoc("es", nodeDoc("c1:5:n1", `{"v":1}`)))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:5:n2", `{"v":1}`)))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:5:n1", `{"v":2}`)))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:5:n1", `{"v":3}`)))
	// Same id in another index is another document.
	must(t, s.EnqueueDoc("es", store.Doc{Kind: store.KindNodeDoc, Index: "other", ID: "c1:5:n1", Body: []byte(`{"v":9}`)}))
	// Job documents are never superseded.
	must(t, s.EnqueueDoc("es", jobDoc("c1:5", `{"v":1}`)))
	must(t, s.EnqueueDoc("es", jobDoc("c1:5", `{"v":2}`)))

	st, _ := s.Stats()
	got := describe(replayAll(t, s))
	want := `node_document(nodes/c1:5:n2:{"v":1}) node_document(nodes/c1:5:n1:{"v":3}) node_document(other/c1:5:n1:{"v":9}) job_document(jobs/c1:5:{"v":1}) job_document(jobs/c1:5:{"v":2})`
	if got != want {
		t.Errorf("replayed\n %s\nwant\n %s", got, want)
	}
	if st.Replaced != 2 {
		t.Errorf("Replaced = %d, want 2", st.Replaced)
	}
}

func TestFullSpoolDropsSamplesThenNodeDocsNeverJobDocs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := strings.Repeat("x", 1000) // each item file is a bit over 1000 bytes
	itemSize := int64(len(encodeItem(Item{Kind: store.KindJobDoc, Target: "es", Index: "jobs", ID: "c1:10", Body: []byte(body)})))
	s := openTest(t, dir, 6*itemSize+itemSize/2) // room for 6 items

	must(t, s.EnqueueSamples("prom", []byte(body[:len(body)-5]+"old-1")))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:10:n1", body)))
	must(t, s.EnqueueSamples("prom", []byte(body[:len(body)-5]+"old-2")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:10", body)))
	must(t, s.EnqueueSamples("prom", []byte(body[:len(body)-5]+"new-3")))
	must(t, s.EnqueueDoc("es", nodeDoc("c1:11:n1", body)))
	st, _ := s.Stats()
	if st.Items != 6 || st.Dropped[store.KindSamples] != 0 {
		t.Fatalf("6 items within the budget: stats %+v", st)
	}

	// Two more job documents: the two oldest sample batches go.
	must(t, s.EnqueueDoc("es", jobDoc("c1:12", body)))
	must(t, s.EnqueueDoc("es", jobDoc("c1:13", body)))
	st, _ = s.Stats()
	if st.Dropped[store.KindSamples] != 2 || st.Dropped[store.KindNodeDoc] != 0 || st.Items != 6 {
		t.Fatalf("after 2 more job docs: stats %+v; want 2 sample batches dropped, 6 items", st)
	}
	// Three more: the last sample batch, then the two node documents.
	for _, id := range []string{"c1:14", "c1:15", "c1:16"} {
		must(t, s.EnqueueDoc("es", jobDoc(id, body)))
	}
	st, _ = s.Stats()
	if st.Dropped[store.KindSamples] != 3 || st.Dropped[store.KindNodeDoc] != 2 || st.Dropped[store.KindJobDoc] != 0 || st.OverBudget {
		t.Fatalf("after 5 more job docs: stats %+v; want 3 sample batches and 2 node docs dropped", st)
	}
	// Job documents only: the spool goes over its budget and keeps them all.
	must(t, s.EnqueueDoc("es", jobDoc("c1:17", body)))
	st, _ = s.Stats()
	if !st.OverBudget || st.Bytes <= st.MaxBytes || st.Dropped[store.KindJobDoc] != 0 {
		t.Errorf("over budget with job docs only: stats %+v; want OverBudget and nothing dropped", st)
	}
	var ids []string
	for _, it := range replayAll(t, s) {
		if it.Kind != store.KindJobDoc {
			t.Errorf("a %s survived while job docs filled the spool", it.Kind.String())
		}
		ids = append(ids, it.ID)
	}
	if got := strings.Join(ids, ","); got != "c1:10,c1:12,c1:13,c1:14,c1:15,c1:16,c1:17" {
		t.Errorf("job documents kept: %s; want all 7", got)
	}
}

func TestPartialWritesAreIgnoredAndCleaned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openTest(t, dir, 0)
	must(t, s.EnqueueDoc("es", jobDoc("c1:1", `{"ok":true}`)))

	// What a process killed mid-write leaves: a temporary file with part of
	// an item. One from a dead process, one from a live one (written now).
	full := encodeItem(Item{Kind: store.KindJobDoc, Target: "es", Index: "jobs", ID: "c1:2", Body: []byte(`{"ok":true}`)})
	dead := filepath.Join(dir, tempPrefix+strconv.Itoa(deadPID(t))+"-123")
	live := filepath.Join(dir, tempPrefix+strconv.Itoa(os.Getppid())+"-456")
	must(t, os.WriteFile(dead, full[:len(full)/2], 0o600))
	must(t, os.WriteFile(live, full[:len(full)/3], 0o600))

	s2 := openTest(t, dir, 0) // the next agent on the node
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file of a dead process still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("temporary file of a live process was removed: %v", err)
	}
	st, _ := s2.Stats()
	if got := describe(replayAll(t, s2)); got != `job_document(jobs/c1:1:{"ok":true})` || st.Items != 1 {
		t.Errorf("replayed %s (stats %+v); want only the complete item", got, st)
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	must(t, cmd.Run())
	return cmd.Process.Pid
}

func TestCorruptFilesAreSetAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openTest(t, dir, 0)
	must(t, s.EnqueueDoc("es", jobDoc("c1:1", "{}")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:2", "{}")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:3", "{}")))
	entries, err := s.scan()
	must(t, err)
	// Flip a byte in the second, truncate the third, and add junk under an
	// item name.
	b, _ := os.ReadFile(filepath.Join(dir, entries[1].name))
	b[len(b)/2] ^= 0xff
	must(t, os.WriteFile(filepath.Join(dir, entries[1].name), b, 0o600))
	must(t, os.Truncate(filepath.Join(dir, entries[2].name), 7))
	must(t, os.WriteFile(filepath.Join(dir, "junk.item"), []byte("junk"), 0o600))

	if got := describe(replayAll(t, s)); got != `job_document(jobs/c1:1:{})` {
		t.Errorf("replayed %s; want only the intact c1:1", got)
	}
	st, _ := s.Stats()
	aside, _ := filepath.Glob(filepath.Join(dir, corruptDir, "*"))
	if st.Corrupt != 3 || len(aside) != 3 || st.Items != 0 {
		t.Errorf("corrupt/ holds %v, stats %+v; want the 3 bad files there and none left", aside, st)
	}
}

func TestOneReplayerAtATime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := openTest(t, dir, 0)
	b := openTest(t, dir, 0) // another agent process sharing the directory
	must(t, a.EnqueueDoc("es", jobDoc("c1:1", "{}")))

	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.Replay(context.Background(), func(context.Context, Item) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	if err := b.Replay(context.Background(), func(context.Context, Item) error { return nil }); !errors.Is(err, ErrBusy) {
		t.Errorf("second replayer: %v; want ErrBusy", err)
	}
	if err := a.Replay(context.Background(), func(context.Context, Item) error { return nil }); !errors.Is(err, ErrBusy) {
		t.Errorf("second replay in the same Spool: %v; want ErrBusy", err)
	}
	// Enqueueing is not blocked by a replay.
	must(t, b.EnqueueDoc("es", jobDoc("c1:2", "{}")))
	close(release)
	must(t, <-done)
	if got := describe(replayAll(t, b)); got != `job_document(jobs/c1:2:{})` {
		t.Errorf("after the first replay: %s; want c1:2 left for the next", got)
	}
}

func TestEnqueueRejectsBadItems(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), 0)
	if err := s.Enqueue(Item{Kind: 7, Body: []byte("x")}); err == nil || !strings.Contains(err.Error(), "kind 7") {
		t.Errorf("unknown kind: %v", err)
	}
	if err := s.EnqueueDoc("es", store.Doc{Kind: store.KindJobDoc, Index: "jobs", Body: []byte("{}")}); err == nil {
		t.Error("a document without id: no error")
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open with no directory: no error")
	}
}

// TestSurvivesKill kills (SIGKILL) a process that enqueues as fast as it
// can, then checks that every item left is whole.
func TestSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEnqueueForever$")
	cmd.Env = append(os.Environ(), "JOBSIGHT_SPOOL_HELPER_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	// Wait until it has written a fair number of items, then kill it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		names, _ := filepath.Glob(filepath.Join(dir, "*.item"))
		if len(names) >= 200 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("helper wrote %d items in 30 s: %s", len(names), stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	s := openTest(t, dir, 0)
	items := replayAll(t, s)
	st, _ := s.Stats()
	if st.Corrupt != 0 || len(items) < 200 {
		t.Fatalf("after the kill: %d items replayed, %d corrupt; want ≥200 and none corrupt", len(items), st.Corrupt)
	}
	for i, it := range items {
		if want := fmt.Sprintf(`{"n":%d}`, i); string(it.Body) != want {
			t.Fatalf("item %d has body %s, want %s (lost or reordered)", i, it.Body, want)
		}
	}
	temps, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	if len(temps) != 0 {
		t.Errorf("temporary files left after Open: %v", temps)
	}
}

// TestHelperEnqueueForever is the process TestSurvivesKill kills.
func TestHelperEnqueueForever(t *testing.T) {
	dir := os.Getenv("JOBSIGHT_SPOOL_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestSurvivesKill")
	}
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		if err := s.EnqueueDoc("es", jobDoc("c1:"+strconv.Itoa(n), fmt.Sprintf(`{"n":%d}`, n))); err != nil {
			t.Fatal(err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rejected/ keeps only the newest MaxAsideFiles files: a store refusing
// everything for days does not fill the disk.
func TestSetAsideIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openTest(t, dir, 0)
	n := MaxAsideFiles + 25
	for i := 0; i < n; i++ {
		must(t, s.EnqueueSamples("prom", []byte(fmt.Sprintf("batch %d", i))))
	}
	must(t, s.Replay(context.Background(), func(context.Context, Item) error {
		return fmt.Errorf("out of order: %w", ErrReject)
	}))
	rejected, _ := filepath.Glob(filepath.Join(dir, "rejected", "*"))
	st, _ := s.Stats()
	if len(rejected) != MaxAsideFiles || st.Rejected != uint64(n) || st.Pruned != 25 {
		t.Errorf("rejected/ holds %d files (stats %+v), want the newest %d of %d", len(rejected), st, MaxAsideFiles, n)
	}
}

// ReplayTo: a target found down is tried once and then skipped, while the
// other target's items go; a target without a sender keeps its items; an
// item for an unknown target is rejected; a sender's ErrReject rejects.
func TestReplayToSkipsADownTargetAndDeliversTheOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openTest(t, dir, 0)
	must(t, s.EnqueueDoc("es", jobDoc("c1:1", "{}")))
	must(t, s.EnqueueSamples("prom", []byte("b1")))
	must(t, s.EnqueueDoc("es", jobDoc("c1:2", "{}")))
	must(t, s.EnqueueSamples("prom", []byte("b2")))
	must(t, s.EnqueueSamples("files", []byte("f1")))
	must(t, s.EnqueueSamples("nowhere", []byte("x1")))
	must(t, s.EnqueueDoc("bad", jobDoc("c1:3", "{}")))
	esCalls, downs := 0, map[string]int{}
	var sent []string
	err := s.ReplayTo(context.Background(), map[string]Sender{
		"es": func(context.Context, Item) error { esCalls++; return errors.New("connection refused") },
		"prom": func(_ context.Context, it Item) error {
			sent = append(sent, string(it.Body))
			return nil
		},
		"files": nil,
		"bad":   func(context.Context, Item) error { return fmt.Errorf("mapping conflict: %w", ErrReject) },
	}, func(target string, _ error) { downs[target]++ })
	must(t, err)
	if esCalls != 1 || downs["es"] != 1 || len(downs) != 1 {
		t.Errorf("the down store was tried %d times, reported %v; want once", esCalls, downs)
	}
	if strings.Join(sent, ",") != "b1,b2" {
		t.Errorf("delivered %v; want both sample batches despite the store being down", sent)
	}
	if got := describe(replayAll(t, s)); got != "job_document(jobs/c1:1:{}) job_document(jobs/c1:2:{}) samples(files:f1)" {
		t.Errorf("left: %s; want the down store's documents and the unconfigured target's batch", got)
	}
	rejected, _ := filepath.Glob(filepath.Join(dir, "rejected", "*.item"))
	if len(rejected) != 2 {
		t.Errorf("rejected/ holds %v; want the unknown target's and the refused item", rejected)
	}
}
