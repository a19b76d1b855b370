package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeClock is an injected clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// writeFile writes a file in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testConfig is an enabled configuration for ts: STARTTLS (or what the
// server's mode needs), AUTH PLAIN with the right password, the test CA,
// a template and a fresh spool.
func testConfig(t *testing.T, ts *testServer) Config {
	t.Helper()
	c := Default()
	c.Enabled = true
	c.SMTP.Host = "127.0.0.1"
	c.SMTP.Port = ts.port
	c.SMTP.HeloName = "jobsight.test"
	c.SMTP.Username = testUser
	c.SMTP.PasswordFile = writeFile(t, "password", testPass+"\n")
	c.SMTP.CAFile = ts.caFile
	c.SMTP.ConnectTimeout = 5 * time.Second
	c.SMTP.SendTimeout = 30 * time.Second
	switch ts.mode {
	case srvImplicit:
		c.SMTP.TLS = TLSImplicit
	case srvPlain:
		c.SMTP.TLS = TLSNone
		c.SMTP.CAFile = ""
	}
	c.From = "Jobsight <jobsight@example.org>"
	c.Recipients.AddressTemplate = "{user}@example.org"
	c.SpoolDir = filepath.Join(t.TempDir(), "spool")
	return c
}

// newNotifier makes a Notifier with its own registry.
func newNotifier(t *testing.T, cfg Config, clock *fakeClock) (*Notifier, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	n, err := New(cfg, Options{Registerer: reg, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n, reg
}

// report makes a GPU job report.
func report(user, job, class string) Report {
	return Report{
		JobDocID: "hpc1/" + job,
		Cluster:  "hpc1",
		JobID:    job,
		User:     user,
		Account:  "physics",
		Text:     "Report on job " + job + " (" + class + ").\n.a line starting with a dot\n" + strings.Repeat("long ", 40) + "\n",
		HTML:     "<!DOCTYPE html><html><head><style>p{color:red}</style></head><body><p>Job " + job + " is " + class + "</p></body></html>",
		GPUJob:   true,
		Class:    class,
		EndTime:  time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC),
	}
}

func mustEnqueue(t *testing.T, n *Notifier, r Report) {
	t.Helper()
	if err := n.Enqueue(r); err != nil {
		t.Fatalf("Enqueue(%s): %v", r.JobID, err)
	}
}

func flush(t *testing.T, n *Notifier, now time.Time) (int, error) {
	t.Helper()
	return n.Flush(context.Background(), now)
}

func mustFlush(t *testing.T, n *Notifier, now time.Time, want int) {
	t.Helper()
	sent, err := flush(t, n, now)
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if sent != want {
		t.Fatalf("Flush sent %d messages, want %d", sent, want)
	}
}

// metric reads the value of a counter or gauge.
func metric(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("metric %v is neither counter nor gauge", c)
	return 0
}

// checkOrder checks that needles occur in s in this order.
func checkOrder(t *testing.T, what, s string, needles ...string) {
	t.Helper()
	at := 0
	for _, n := range needles {
		i := strings.Index(s[at:], n)
		if i < 0 {
			t.Fatalf("%s: %q missing or out of order in:\n%s", what, n, s)
		}
		at += i + len(n)
	}
}

func TestDigestAfterWindow(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.Recipients.MappingFile = writeFile(t, "mapping", "# site mapping\nbob: Bob Smith <bob.smith@lab.example>\n")
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	t0 := clock.Now()

	mustEnqueue(t, n, report("alice", "101", "efficient"))
	clock.Advance(time.Hour)
	mustEnqueue(t, n, report("alice", "102", "wasted"))
	mustEnqueue(t, n, report("bob", "201", "inefficient"))
	clock.Advance(time.Hour)
	mustEnqueue(t, n, report("alice", "103", "efficient"))
	if got := n.Pending(); got != 4 {
		t.Fatalf("Pending = %d, want 4", got)
	}
	if got := metric(t, n.met.pending); got != 4 {
		t.Fatalf("pending gauge = %v, want 4", got)
	}

	// Inside alice's window nothing is sent, and no connection is made.
	mustFlush(t, n, t0.Add(24*time.Hour-time.Second), 0)
	if s, _ := ts.counts(); s != 0 || len(ts.messages()) != 0 {
		t.Fatalf("server saw %d sessions, %d messages before the window ended", s, len(ts.messages()))
	}

	// Alice's window (from her oldest report) has passed; bob's has not.
	mustFlush(t, n, t0.Add(24*time.Hour), 1)
	msgs := ts.messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if !m.tls || m.authUser != testUser {
		t.Fatalf("message sent with tls=%v auth=%q", m.tls, m.authUser)
	}
	if m.from != "jobsight@example.org" || !slices.Equal(m.rcpts, []string{"alice@example.org"}) {
		t.Fatalf("envelope from %q to %q", m.from, m.rcpts)
	}
	p := parseMessage(t, m.data)
	if want := "Jobsight: 3 jobs on hpc1 (1 wasted, 2 efficient)"; p.subject != want {
		t.Fatalf("Subject = %q, want %q", p.subject, want)
	}
	if got := p.header.Get("To"); got != "<alice@example.org>" {
		t.Fatalf("To = %q", got)
	}
	if got := p.header.Get("From"); got != `"Jobsight" <jobsight@example.org>` {
		t.Fatalf("From = %q", got)
	}
	if d, err := p.header.Date(); err != nil || !d.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("Date = %v, %v; want the flush time", d, err)
	}
	if id := p.header.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.org>") {
		t.Fatalf("Message-ID = %q", id)
	}
	if p.header.Get("MIME-Version") != "1.0" {
		t.Fatalf("MIME-Version = %q", p.header.Get("MIME-Version"))
	}
	if !slices.Equal(p.partTypes, []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"}) {
		t.Fatalf("parts %q", p.partTypes)
	}
	checkOrder(t, "text", p.text, "Report on job 101", ".a line starting with a dot", "Report on job 102", "Report on job 103")
	checkOrder(t, "html", p.html, "<style>p{color:red}</style>", "Job 101 on hpc1: efficient", "<p>Job 101 is efficient</p>",
		"<p>Job 102 is wasted</p>", "<p>Job 103 is efficient</p>")
	if strings.Count(p.html, "<body") != 1 {
		t.Fatalf("digest HTML nests documents:\n%s", p.html)
	}
	if !strings.Contains(p.text, strings.Repeat("long ", 40)) {
		t.Fatal("long line not intact after quoted-printable round trip")
	}
	if got := n.Pending(); got != 1 {
		t.Fatalf("Pending = %d after alice's digest, want 1 (bob's)", got)
	}

	// Bob's window ends an hour later; his address comes from the mapping.
	mustFlush(t, n, t0.Add(25*time.Hour), 1)
	msgs = ts.messages()
	if len(msgs) != 2 || !slices.Equal(msgs[1].rcpts, []string{"bob.smith@lab.example"}) {
		t.Fatalf("second message to %v", msgs[len(msgs)-1].rcpts)
	}
	p = parseMessage(t, msgs[1].data)
	if got := p.header.Get("To"); got != `"Bob Smith" <bob.smith@lab.example>` {
		t.Fatalf("To = %q", got)
	}
	if got := metric(t, n.met.sent); got != 2 {
		t.Fatalf("sent counter = %v, want 2", got)
	}
	if got := metric(t, n.met.pending); got != 0 {
		t.Fatalf("pending gauge = %v, want 0", got)
	}
	// Nothing left: another flush sends nothing.
	mustFlush(t, n, t0.Add(72*time.Hour), 0)
}

func TestWindowZeroSendsEachAloneInOneSession(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	r1 := report("alice", "1", "wasted")
	r1.Subject = "Your job 1 wasted its GPUs"
	mustEnqueue(t, n, r1)
	mustEnqueue(t, n, report("alice", "2", "efficient"))
	mustEnqueue(t, n, report("bob", "3", "efficient"))
	mustFlush(t, n, clock.Now(), 3)
	msgs := ts.messages()
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3", len(msgs))
	}
	if s, a := ts.counts(); s != 1 || a != 1 {
		t.Fatalf("%d sessions, %d AUTHs; want one of each", s, a)
	}
	var subjects []string
	for _, m := range msgs {
		subjects = append(subjects, parseMessage(t, m.data).subject)
	}
	want := []string{"Your job 1 wasted its GPUs", "Jobsight: 1 job on hpc1 (1 efficient)", "Jobsight: 1 job on hpc1 (1 efficient)"}
	if !slices.Equal(subjects, want) {
		t.Fatalf("subjects %q, want %q", subjects, want)
	}
	// A report alone keeps its own HTML document.
	if p := parseMessage(t, msgs[0].data); !strings.HasPrefix(p.html, "<!DOCTYPE html><html><head><style>") {
		t.Fatalf("single report's HTML changed:\n%s", p.html)
	}
}

func TestMaxReportsPerDigestAndDuplicates(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.MaxReportsPerDigest = 2
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	for i := 1; i <= 5; i++ {
		mustEnqueue(t, n, report("alice", itoa(i), "efficient"))
	}
	again := report("alice", "2", "wasted") // re-analysed: replaces job 2
	mustEnqueue(t, n, again)
	mustFlush(t, n, clock.Now().Add(24*time.Hour), 3)
	msgs := ts.messages()
	var texts []string
	for _, m := range msgs {
		texts = append(texts, parseMessage(t, m.data).text)
	}
	checkOrder(t, "first", texts[0], "job 1 (efficient)", "job 2 (wasted)")
	checkOrder(t, "second", texts[1], "job 3", "job 4")
	checkOrder(t, "third", texts[2], "job 5")
	if strings.Contains(strings.Join(texts, ""), "job 2 (efficient)") {
		t.Fatal("replaced report was sent too")
	}
	if s, _ := ts.counts(); s != 1 {
		t.Fatalf("%d sessions, want 1", s)
	}
	if n.Pending() != 0 {
		t.Fatalf("Pending = %d", n.Pending())
	}
}

func TestRestartKeepsPendingReports(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	clock := newClock()
	n1, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n1, report("alice", "1", "wasted"))
	mustEnqueue(t, n1, report("alice", "2", "efficient"))

	n2, _ := newNotifier(t, cfg, clock) // the process restarted
	if n2.Pending() != 2 {
		t.Fatalf("Pending after restart = %d, want 2", n2.Pending())
	}
	mustEnqueue(t, n2, report("alice", "3", "efficient"))
	mustFlush(t, n2, clock.Now().Add(24*time.Hour), 1)
	p := parseMessage(t, ts.messages()[0].data)
	checkOrder(t, "text", p.text, "job 1", "job 2", "job 3")
}

func TestRecipientsFromMappingAndTemplate(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	cfg.Recipients.MappingFile = writeFile(t, "mapping", "carol: carol@physics.example\n")
	clock := newClock()
	n, reg := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("carol", "1", "wasted"))
	mustEnqueue(t, n, report("dave", "2", "wasted"))
	mustFlush(t, n, clock.Now(), 2)
	var got []string
	for _, m := range ts.messages() {
		got = append(got, m.rcpts...)
	}
	if want := []string{"carol@physics.example", "dave@example.org"}; !slices.Equal(got, want) {
		t.Fatalf("recipients %q, want %q", got, want)
	}

	// Mapping only: a user it does not list gets nothing.
	cfg2 := testConfig(t, ts)
	cfg2.Recipients.AddressTemplate = ""
	cfg2.Recipients.MappingFile = cfg.Recipients.MappingFile
	n2, _ := newNotifier(t, cfg2, clock)
	mustEnqueue(t, n2, report("dave", "3", "wasted"))
	if n2.Pending() != 0 || metric(t, n2.met.dropped.WithLabelValues(dropNoAddress)) != 1 {
		t.Fatalf("unmapped user: pending %d, no_address %v", n2.Pending(), metric(t, n2.met.dropped.WithLabelValues(dropNoAddress)))
	}
	_ = reg
}

func TestOptOut(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	optOut := writeFile(t, "optout", "# users who asked for no mail\ncarol\n")
	cfg.OptOutFile = optOut
	cfg.Recipients.MappingFile = writeFile(t, "mapping", "dave: -\n")
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	dropped := n.met.dropped.WithLabelValues(dropOptOut)

	mustEnqueue(t, n, report("carol", "1", "wasted")) // opt-out file
	mustEnqueue(t, n, report("dave", "2", "wasted"))  // mapped to "-"
	mustEnqueue(t, n, report("erin", "3", "wasted"))
	if n.Pending() != 1 || metric(t, dropped) != 2 {
		t.Fatalf("pending %d, dropped for opt-out %v; want 1 and 2", n.Pending(), metric(t, dropped))
	}

	// Carol opts back in: the file is re-read.
	if err := os.WriteFile(optOut, []byte("# nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, n, report("carol", "4", "wasted"))
	if n.Pending() != 2 {
		t.Fatalf("pending %d after carol opted in, want 2", n.Pending())
	}

	// Erin opts out while her report waits: it is dropped at Flush.
	if err := os.WriteFile(optOut, []byte("erin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, n, clock.Now(), 1)
	msgs := ts.messages()
	if len(msgs) != 1 || !slices.Equal(msgs[0].rcpts, []string{"carol@example.org"}) {
		t.Fatalf("messages to %v, want only carol", msgs)
	}
	if n.Pending() != 0 || metric(t, dropped) != 3 {
		t.Fatalf("pending %d, dropped %v; want 0 and 3", n.Pending(), metric(t, dropped))
	}

	// An opt-out file that cannot be read stops sending (and keeps reports).
	mustEnqueue(t, n, report("frank", "5", "wasted"))
	if err := os.Chmod(optOut, 0o000); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(optOut); err == nil { // running as root: make it unparsable instead
		f.Close()
		if err := os.WriteFile(optOut, []byte("bad\x01user\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := flush(t, n, clock.Now()); err == nil || !strings.Contains(err.Error(), "nothing sent") {
		t.Fatalf("Flush with broken opt-out file: %v", err)
	}
	if n.Pending() != 1 || len(ts.messages()) != 1 {
		t.Fatalf("pending %d, messages %d", n.Pending(), len(ts.messages()))
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	clock := newClock()

	cfg := testConfig(t, ts)
	cfg.GPUJobsOnly = true
	n, _ := newNotifier(t, cfg, clock)
	cpu := report("alice", "1", "wasted")
	cpu.GPUJob = false
	mustEnqueue(t, n, cpu)
	mustEnqueue(t, n, report("alice", "2", "wasted"))
	if n.Pending() != 1 || metric(t, n.met.dropped.WithLabelValues(dropFiltered)) != 1 {
		t.Fatalf("gpu_jobs_only: pending %d", n.Pending())
	}

	cfg = testConfig(t, ts)
	cfg.GPUJobsOnly = false
	cfg.Classes = []string{"wasted", "inefficient"}
	n, _ = newNotifier(t, cfg, clock)
	mustEnqueue(t, n, cpu)
	mustEnqueue(t, n, report("alice", "3", "efficient"))
	mustEnqueue(t, n, report("alice", "4", "inefficient"))
	mustEnqueue(t, n, report("alice", "5", "Wasted"))
	if n.Pending() != 3 {
		t.Fatalf("classes: pending %d, want 3", n.Pending())
	}
}

func TestWrongPasswordKeepsReports(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	const wrong = "wrong-Secret-42"
	if err := os.WriteFile(cfg.SMTP.PasswordFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	due := clock.Now().Add(24 * time.Hour)

	sent, err := flush(t, n, due)
	if err == nil || sent != 0 {
		t.Fatalf("Flush = %d, %v; want an error", sent, err)
	}
	msg := err.Error()
	if strings.Contains(msg, wrong) || strings.Contains(fmt.Sprintf("%+v", err), wrong) {
		t.Fatalf("error shows the password: %s", msg)
	}
	if !strings.Contains(msg, `"alice"`) || !strings.Contains(msg, "535") {
		t.Fatalf("error should name the user and the server's reply: %s", msg)
	}
	if n.Pending() != 1 || len(ts.messages()) != 0 {
		t.Fatalf("pending %d, messages %d", n.Pending(), len(ts.messages()))
	}
	if got := metric(t, n.met.failures.WithLabelValues(reasonPermanent)); got != 1 {
		t.Fatalf("permanent failures = %v", got)
	}

	// The password file is read per session: fixing it is enough.
	if err := os.WriteFile(cfg.SMTP.PasswordFile, []byte(testPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, n, due, 1)
	if n.Pending() != 0 {
		t.Fatalf("Pending = %d", n.Pending())
	}
}

func TestServerDownThenUp(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	ts.down()

	due := clock.Now().Add(24 * time.Hour)
	sent, err := flush(t, n, due)
	if err == nil || sent != 0 || !strings.Contains(err.Error(), `"alice"`) {
		t.Fatalf("Flush with server down = %d, %v", sent, err)
	}
	if n.Pending() != 1 || metric(t, n.met.failures.WithLabelValues(reasonTemporary)) != 1 {
		t.Fatalf("pending %d", n.Pending())
	}

	// More reports arrive meanwhile; they join the overdue digest.
	mustEnqueue(t, n, report("alice", "2", "efficient"))
	ts.up()
	mustFlush(t, n, due.Add(time.Hour), 1)
	p := parseMessage(t, ts.messages()[0].data)
	checkOrder(t, "text", p.text, "job 1", "job 2")
}

func TestPermanentFailureForOneRecipient(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	ts.refuseRcpt("mallory@example.org", 550)
	ts.refuseRcpt("tim@example.org", 451)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("mallory", "1", "wasted"))
	mustEnqueue(t, n, report("tim", "2", "wasted"))
	mustEnqueue(t, n, report("alice", "3", "wasted"))

	sent, err := flush(t, n, clock.Now())
	if sent != 1 || err == nil {
		t.Fatalf("Flush = %d, %v; want 1 and an error", sent, err)
	}
	for _, want := range []string{`"mallory"`, "550", "refused permanently", `"tim"`, "451", "stay pending"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error lacks %q: %v", want, err)
		}
	}
	msgs := ts.messages()
	if len(msgs) != 1 || !slices.Equal(msgs[0].rcpts, []string{"alice@example.org"}) {
		t.Fatalf("messages: %v", msgs)
	}
	if got := metric(t, n.met.failures.WithLabelValues(reasonPermanent)); got != 1 {
		t.Fatalf("permanent failures = %v", got)
	}
	if got := metric(t, n.met.failures.WithLabelValues(reasonTemporary)); got != 1 {
		t.Fatalf("temporary failures = %v", got)
	}
	// Mallory's report moved to failed/, tim's waits for the next try.
	failed, _ := os.ReadDir(filepath.Join(cfg.SpoolDir, failedDir))
	if len(failed) != 1 || n.Pending() != 1 {
		t.Fatalf("failed/ has %d files, pending %d; want 1 and 1", len(failed), n.Pending())
	}
	ts.mu.Lock()
	delete(ts.refuse, "tim@example.org")
	ts.mu.Unlock()
	mustFlush(t, n, clock.Now(), 1)
}

func TestHeaderInjection(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)

	for _, user := range []string{"eve\r\nBcc: x@evil.example", "eve\nBcc: x@evil.example", "eve@evil.example", "eve,x@evil.example",
		"<x@evil.example>", "eve x", "jörg", "eve\u2028Bcc: x@evil.example", "eve\x00"} {
		err := n.Enqueue(report(user, "1", "wasted"))
		if !errors.Is(err, ErrInvalidAddress) {
			t.Fatalf("Enqueue for user %q: %v, want ErrInvalidAddress", user, err)
		}
	}
	if n.Pending() != 0 {
		t.Fatalf("Pending = %d", n.Pending())
	}

	r := report("alice", "7\r\nBcc: x@evil.example", "wasted\r\nX-Injected: 1")
	r.Cluster = "hpc1\r\nBcc: x@evil.example\r\n\r\nfake body"
	mustEnqueue(t, n, r)
	r2 := report("alice", "8", "wasted")
	r2.Subject = "Job 8\r\nBcc: x@evil.example\nX-Injected: yes"
	mustEnqueue(t, n, r2)
	r3 := report("alice", "9", "efficient")
	r3.Subject = "Jöb 9 — überfällig " + strings.Repeat("ä", 300)
	mustEnqueue(t, n, r3)
	mustFlush(t, n, clock.Now(), 3)

	wantKeys := []string{"Auto-Submitted", "Content-Type", "Date", "From", "Message-Id", "Mime-Version", "Subject", "To", "X-Auto-Response-Suppress"}
	for i, m := range ts.messages() {
		if !slices.Equal(m.rcpts, []string{"alice@example.org"}) {
			t.Fatalf("message %d went to %v", i, m.rcpts)
		}
		p := parseMessage(t, m.data)
		var keys []string
		for k := range p.header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("message %d headers %q, want %q\n%s", i, keys, wantKeys, p.rawHeader)
		}
		for _, line := range strings.Split(strings.TrimSuffix(p.rawHeader, "\r\n"), "\r\n") {
			if len(line) > 998 {
				t.Fatalf("header line of %d bytes", len(line))
			}
			name, _, _ := strings.Cut(line, ":")
			if line[0] != ' ' && !slices.Contains(wantKeys, textproto.CanonicalMIMEHeaderKey(name)) {
				t.Fatalf("unexpected header line %q", line)
			}
			for _, c := range line {
				if c < ' ' && c != '\t' || c > '~' {
					t.Fatalf("header line %q has a raw %q", line, c)
				}
			}
		}
		if strings.ContainsAny(p.subject, "\r\n") {
			t.Fatalf("subject %q", p.subject)
		}
		switch i {
		case 0:
			checkOrder(t, "subject", p.subject, "Jobsight: 1 job on hpc1 Bcc: x@evil.example fake body")
		case 1:
			if p.subject != "Job 8 Bcc: x@evil.example X-Injected: yes" {
				t.Fatalf("subject %q", p.subject)
			}
		case 2:
			if !strings.HasPrefix(p.subject, "Jöb 9 — überfällig ää") || !strings.HasSuffix(p.subject, "…") {
				t.Fatalf("subject %q", p.subject)
			}
		}
	}

	// A mapping file line carrying a header is refused.
	cfg.Recipients.MappingFile = writeFile(t, "mapping", "frank: frank@example.org\rBcc: x@evil.example\n")
	if _, err := New(cfg, Options{Now: clock.Now}); err == nil || !strings.Contains(err.Error(), "mapping_file") {
		t.Fatalf("New with a CR in the mapping file: %v", err)
	}
	cfg.Recipients.MappingFile = writeFile(t, "mapping", "frank: frank@example.org, x@evil.example\n")
	if _, err := New(cfg, Options{Now: clock.Now}); !errors.Is(err, ErrInvalidAddress) {
		t.Fatalf("New with two addresses for a user: %v", err)
	}
}

func TestTLSRequired(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvPlain) // no STARTTLS offered
	clock := newClock()

	cfg := testConfig(t, ts)
	cfg.SMTP.TLS = TLSStartTLS
	cfg.SMTP.CAFile = ts.caFile
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	due := clock.Now().Add(24 * time.Hour)
	sent, err := flush(t, n, due)
	if sent != 0 || !errors.Is(err, errNoStartTLS) {
		t.Fatalf("Flush to a server without STARTTLS = %d, %v", sent, err)
	}
	if _, auths := ts.counts(); auths != 0 || len(ts.messages()) != 0 || n.Pending() != 1 {
		t.Fatalf("credentials or mail went out in plain text (auths %d, messages %d)", auths, len(ts.messages()))
	}

	// tls: none is accepted to loopback, and then works.
	cfg2 := cfg
	cfg2.SMTP.TLS = TLSNone
	cfg2.SMTP.CAFile = ""
	n2, _ := newNotifier(t, cfg2, clock) // same spool
	mustFlush(t, n2, due, 1)
	if m := ts.messages(); len(m) != 1 || m[0].tls || m[0].authUser != testUser {
		t.Fatalf("plain loopback delivery: %+v", m)
	}

	// ...and refused for any other host.
	cfg3 := cfg2
	cfg3.SMTP.Host = "smtp.example.org"
	if err := cfg3.Validate(); err == nil || !strings.Contains(err.Error(), "notify.smtp.tls") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Validate(tls none to smtp.example.org) = %v", err)
	}
	if _, err := New(cfg3, Options{}); err == nil {
		t.Fatal("New accepted tls none to a remote host")
	}
}

func TestUntrustedCertificateRefused(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.SMTP.CAFile = "" // system roots do not know the test CA
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	if sent, err := flush(t, n, clock.Now().Add(24*time.Hour)); sent != 0 || err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Flush with an untrusted certificate = %d, %v", sent, err)
	}
	if _, auths := ts.counts(); auths != 0 || n.Pending() != 1 {
		t.Fatal("authenticated over an unverified connection")
	}
}

func TestImplicitTLS(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvImplicit)
	cfg := testConfig(t, ts)
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	mustFlush(t, n, clock.Now().Add(24*time.Hour), 1)
	if m := ts.messages(); !m[0].tls || m[0].authUser != testUser {
		t.Fatalf("implicit TLS delivery: tls=%v auth=%q", m[0].tls, m[0].authUser)
	}
}

func TestSpoolPermissions(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	if err := os.MkdirAll(cfg.SpoolDir, 0o755); err != nil { // too open: New tightens it
		t.Fatal(err)
	}
	if err := os.Chmod(cfg.SpoolDir, 0o755); err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	mustEnqueue(t, n, report("bob", "2", "wasted"))
	for _, d := range []string{cfg.SpoolDir, filepath.Join(cfg.SpoolDir, pendingDir), filepath.Join(cfg.SpoolDir, failedDir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s has mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	ents, err := os.ReadDir(filepath.Join(cfg.SpoolDir, pendingDir))
	if err != nil || len(ents) != 2 {
		t.Fatalf("pending dir: %d entries, %v; want one file per report", len(ents), err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
}

func TestCorruptSpoolFileIsSetAside(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	bad := filepath.Join(cfg.SpoolDir, pendingDir, "00000000000000000001-0000000000-00000000.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	sent, err := flush(t, n, clock.Now())
	if sent != 1 || err == nil || !strings.Contains(err.Error(), "unreadable spool file") {
		t.Fatalf("Flush = %d, %v", sent, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.SpoolDir, failedDir, filepath.Base(bad))); err != nil {
		t.Fatalf("corrupt file not in failed/: %v", err)
	}
	if n.Pending() != 0 {
		t.Fatalf("Pending = %d", n.Pending())
	}
}

func TestCancelledFlushKeepsReports(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sent, err := n.Flush(ctx, clock.Now().Add(24*time.Hour))
	if sent != 0 || !errors.Is(err, context.Canceled) || n.Pending() != 1 {
		t.Fatalf("cancelled Flush = %d, %v (pending %d)", sent, err, n.Pending())
	}
}

func TestRunFlushes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	cfg.BatchWindow = 0
	clock := newClock()
	n, _ := newNotifier(t, cfg, clock)
	mustEnqueue(t, n, report("alice", "1", "wasted"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx, time.Hour); close(done) }()
	select {
	case <-ts.notify:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not flush")
	}
	cancel()
	<-done
	if len(ts.messages()) != 1 {
		t.Fatalf("%d messages", len(ts.messages()))
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	n, err := New(Default(), Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Enqueue(report("alice", "1", "wasted")); err != nil {
		t.Fatal(err)
	}
	if sent, err := n.Flush(context.Background(), time.Now()); sent != 0 || err != nil {
		t.Fatalf("Flush = %d, %v", sent, err)
	}
	if n.Pending() != 0 {
		t.Fatal("disabled notifier spooled a report")
	}
}

func TestMetricsRegistered(t *testing.T) {
	t.Parallel()
	ts := startServer(t, srvStartTLS)
	cfg := testConfig(t, ts)
	_, reg := newNotifier(t, cfg, newClock())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	want := []string{"jobsight_notify_email_failures_total", "jobsight_notify_emails_sent_total",
		"jobsight_notify_reports_dropped_total", "jobsight_notify_reports_pending"}
	if !slices.Equal(names, want) {
		t.Fatalf("metrics %q, want %q", names, want)
	}
	if _, err := New(cfg, Options{Registerer: reg}); err == nil {
		t.Fatal("second registration on the same registry accepted")
	}
}
