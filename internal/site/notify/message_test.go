package notify

import (
	"bytes"
	"net/mail"
	"strings"
	"testing"
	"time"
)

func TestCleanText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"  a\r\n\tb  ", "a b"},
		{"a\x00b\x7fc\u0085d\u2028e", "a b c d e"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"abcdef", "abc…"},
	} {
		limit := 100
		if c.in == "abcdef" {
			limit = 3
		}
		if got := cleanText(c.in, limit); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDigestSubject(t *testing.T) {
	t.Parallel()
	r := func(cluster, class string) Report { return Report{Cluster: cluster, Class: class} }
	for _, c := range []struct {
		reports []Report
		want    string
	}{
		{[]Report{r("hpc1", "efficient"), r("hpc1", "wasted"), r("hpc1", "efficient")}, "Jobsight: 3 jobs on hpc1 (1 wasted, 2 efficient)"},
		{[]Report{r("hpc1", "short")}, "Jobsight: 1 job on hpc1 (1 short)"},
		{[]Report{r("a", "inefficient"), r("b", "")}, "Jobsight: 2 jobs on a and b (1 inefficient, 1 unknown)"},
		{[]Report{r("a", "x"), r("b", "acceptable"), r("c", "acceptable")}, "Jobsight: 3 jobs on 3 clusters (2 acceptable, 1 x)"},
		{[]Report{{Subject: "Own subject", Class: "wasted"}}, "Own subject"},
	} {
		if got := digestSubject(c.reports); got != c.want {
			t.Errorf("digestSubject = %q, want %q", got, c.want)
		}
	}
}

func TestComposeMessageIsWellFormed(t *testing.T) {
	t.Parallel()
	from := &mail.Address{Name: "Jöbsight Bot", Address: "jobsight@example.org"}
	to := &mail.Address{Address: "alice@example.org"}
	reports := []Report{
		{Cluster: "hpc1", JobID: "1", Class: "wasted", Text: "line one\nline two\r\n" + strings.Repeat("x", 300) + "\n.\n",
			HTML: "<html><body><p>one</p></body></html>", EndTime: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
		{Cluster: "hpc1", JobID: "2", Class: "efficient", Subject: strings.Repeat("word ", 100), HTML: "<p>fragment & more</p>",
			EndTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
	}
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	msg, err := composeMessage(from, to, reports, now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ReplaceAll(msg, []byte("\r\n"), nil), []byte("\n")) || bytes.Contains(bytes.ReplaceAll(msg, []byte("\r\n"), nil), []byte("\r")) {
		t.Fatal("message has a bare CR or LF")
	}
	head, body, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	for _, line := range strings.Split(string(head), "\r\n") {
		if len(line) > 78 && strings.Contains(line, " ") {
			t.Errorf("header line not folded (%d bytes): %q", len(line), line)
		}
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if len(line) > 76 {
			t.Errorf("body line of %d bytes: %q", len(line), line)
		}
	}
	p := parseMessage(t, msg)
	if got := p.header.Get("From"); !strings.HasPrefix(got, "=?utf-8?q?") {
		t.Errorf("non-ASCII display name not encoded: %q", got)
	}
	checkOrder(t, "text", p.text, "Jobsight reports on 2 jobs that ended between 2026-03-01 10:00 UTC and 2026-03-01 12:00 UTC.",
		"Job 1 on hpc1: wasted", "line one\nline two\n", strings.Repeat("x", 300), "\n.\n", "Job 2 on hpc1: efficient", fallbackText)
	checkOrder(t, "html", p.html, "<p>one</p>", "<p>fragment & more</p>")
	if testing.Verbose() {
		t.Logf("message:\n%s", msg)
	}
}

func TestSplitHTML(t *testing.T) {
	t.Parallel()
	body, styles := splitHTML("<!DOCTYPE html><HTML><head><title>x</title><STYLE type=\"text/css\">a{}</STYLE></head>\n<Body class=\"r\">\n<p>hi</p>\n</BODY></html>")
	if body != "\n<p>hi</p>\n" || len(styles) != 1 || styles[0] != "<STYLE type=\"text/css\">a{}</STYLE>" {
		t.Fatalf("splitHTML = %q, %q", body, styles)
	}
	if body, styles := splitHTML("<p>fragment</p>"); body != "<p>fragment</p>" || styles != nil {
		t.Fatalf("fragment: %q, %q", body, styles)
	}
}
