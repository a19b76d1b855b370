package notify

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jobsight/jobsight/internal/textfmt"
)

// Bounds on metadata that reaches headers and headings.
const (
	maxSubjectRunes = 200
	maxFieldRunes   = 100
	// foldAt is the line length after which header values are folded.
	foldAt = 76
)

// cleanText makes untrusted metadata safe for a header or heading:
// invalid UTF-8 becomes U+FFFD, control characters and line separators
// become spaces, runs of white space collapse, and the result is cut to
// maxRunes.
func cleanText(s string, maxRunes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' {
			space = b.Len() > 0
			continue
		}
		if n >= maxRunes {
			b.WriteRune('…')
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// encodeHeaderText returns cleaned text as a header value: as it is when
// printable ASCII, else as RFC 2047 encoded words.
func encodeHeaderText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}

// writeHeader writes "Name: value" folded at spaces. The value must
// already be free of CR, LF and other control characters; writeHeader
// checks again and refuses otherwise.
func writeHeader(buf *bytes.Buffer, name, value string) error {
	if hasControl(name) || hasControl(value) {
		return fmt.Errorf("control character in header %s", strconv.Quote(name))
	}
	buf.WriteString(name)
	buf.WriteString(":")
	col := len(name) + 1
	for _, w := range strings.Split(value, " ") {
		if w == "" {
			continue
		}
		if col > len(name)+1 && col+1+len(w) > foldAt {
			buf.WriteString("\r\n")
			col = 0
		}
		buf.WriteByte(' ')
		buf.WriteString(w)
		col += 1 + len(w)
	}
	buf.WriteString("\r\n")
	return nil
}

// classOrder sorts class names worst first, unknown names after the known
// ones in alphabetical order.
func classOrder(a, b string) int {
	ia, ib := slices.Index(knownClasses, a), slices.Index(knownClasses, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(a, b)
}

// reportClass is the class shown for a report ("unknown" when empty).
func reportClass(r *Report) string {
	c := strings.ToLower(cleanText(r.Class, 32))
	if c == "" {
		return "unknown"
	}
	return c
}

// plural returns "1 job" or "3 jobs".
// digestSubject is the subject of a message carrying reports: the
// report's own subject when it is alone and has one, else a summary like
// "Jobsight: 3 jobs on hpc1 (1 wasted, 2 efficient)". The result is
// cleaned text, not yet encoded.
func digestSubject(reports []Report) string {
	if len(reports) == 1 {
		if s := cleanText(reports[0].Subject, maxSubjectRunes); s != "" {
			return s
		}
	}
	var clusters []string
	counts := map[string]int{}
	for i := range reports {
		if c := cleanText(reports[i].Cluster, maxFieldRunes); c != "" && !slices.Contains(clusters, c) {
			clusters = append(clusters, c)
		}
		counts[reportClass(&reports[i])]++
	}
	var s strings.Builder
	s.WriteString("Jobsight: " + textfmt.Plural(len(reports), "job"))
	switch len(clusters) {
	case 0:
	case 1:
		s.WriteString(" on " + clusters[0])
	case 2:
		s.WriteString(" on " + clusters[0] + " and " + clusters[1])
	default:
		s.WriteString(" on " + strconv.Itoa(len(clusters)) + " clusters")
	}
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, classOrder)
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = strconv.Itoa(counts[c]) + " " + c
	}
	s.WriteString(" (" + strings.Join(parts, ", ") + ")")
	return cleanText(s.String(), maxSubjectRunes)
}

// heading names one report inside a digest: "Job 123 on hpc1: wasted".
func heading(r *Report) string {
	job := cleanText(r.JobID, maxFieldRunes)
	if job == "" {
		job = "(no id)"
	}
	h := "Job " + job
	if c := cleanText(r.Cluster, maxFieldRunes); c != "" {
		h += " on " + c
	}
	return h + ": " + reportClass(r)
}

var (
	bodyOpen  = regexp.MustCompile(`(?is)<body\b[^>]*>`)
	bodyClose = regexp.MustCompile(`(?is)</body\s*>`)
	styleElem = regexp.MustCompile(`(?is)<style\b[^>]*>.*?</style\s*>`)
)

// splitHTML returns the content of a document's body (the whole input
// when it is a fragment) and the <style> elements before the body.
func splitHTML(doc string) (body string, styles []string) {
	loc := bodyOpen.FindStringIndex(doc)
	if loc == nil {
		return doc, nil
	}
	styles = styleElem.FindAllString(doc[:loc[0]], -1)
	body = doc[loc[1]:]
	if c := bodyClose.FindAllStringIndex(body, -1); len(c) > 0 {
		body = body[:c[len(c)-1][0]]
	}
	return body, styles
}

// textToHTML renders plain text as preformatted HTML.
func textToHTML(text string) string {
	return "<pre style=\"white-space: pre-wrap\">" + html.EscapeString(text) + "</pre>"
}

// timeRange describes when the reports' jobs ended, "" when unknown.
func timeRange(reports []Report) string {
	var first, last time.Time
	for i := range reports {
		t := reports[i].EndTime
		if t.IsZero() {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if last.IsZero() || t.After(last) {
			last = t
		}
	}
	const layout = "2006-01-02 15:04 MST"
	switch {
	case first.IsZero():
		return ""
	case first.Equal(last):
		return " that ended at " + first.UTC().Format(layout)
	default:
		return " that ended between " + first.UTC().Format(layout) + " and " + last.UTC().Format(layout)
	}
}

// fallbackText stands in for a report without a text rendering.
const fallbackText = "(This report has no plain-text version; see the HTML version of this message.)"

// digestBodies renders the text and HTML of a message carrying reports. A
// single report keeps its renderings as they are; several are put one
// after the other under headings, after a line saying what is inside.
func digestBodies(reports []Report, subject string) (text, htmlDoc string) {
	if len(reports) == 1 {
		r := &reports[0]
		text, htmlDoc = r.Text, r.HTML
		if text == "" {
			text = fallbackText
		}
		if htmlDoc == "" {
			htmlDoc = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.EscapeString(subject) +
				"</title></head><body>\n" + textToHTML(text) + "\n</body></html>\n"
		}
		return text, htmlDoc
	}
	intro := "Jobsight reports on " + textfmt.Plural(len(reports), "job") + timeRange(reports) + "."
	rule := strings.Repeat("-", 72)
	var t strings.Builder
	t.WriteString(intro + "\n")
	var h strings.Builder
	var styles []string
	for i := range reports {
		r := &reports[i]
		head := heading(r)
		t.WriteString("\n" + rule + "\n" + head + "\n" + rule + "\n\n")
		body := strings.TrimRight(r.Text, "\n")
		if body == "" {
			body = fallbackText
		}
		t.WriteString(body + "\n")

		frag := textToHTML(body)
		if r.HTML != "" {
			var st []string
			frag, st = splitHTML(r.HTML)
			for _, s := range st {
				if !slices.Contains(styles, s) {
					styles = append(styles, s)
				}
			}
		}
		if i > 0 {
			h.WriteString("<hr>\n")
		}
		h.WriteString("<section>\n<h2>" + html.EscapeString(head) + "</h2>\n" + frag + "\n</section>\n")
	}
	htmlDoc = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.EscapeString(subject) + "</title>\n" +
		strings.Join(styles, "\n") + "</head><body>\n<p>" + html.EscapeString(intro) + "</p>\n" + h.String() + "</body></html>\n"
	return t.String(), htmlDoc
}

// messageID makes a unique Message-ID in the sender's domain.
func messageID(from *mail.Address, now time.Time) string {
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	return "<" + strconv.FormatInt(now.Unix(), 36) + "." + hex.EncodeToString(rnd[:]) + "@" + domain + ">"
}

// composeMessage builds the whole RFC 5322 message, CRLF line endings,
// as multipart/alternative with a quoted-printable text and HTML part.
func composeMessage(from, to *mail.Address, reports []Report, now time.Time) ([]byte, error) {
	subject := digestSubject(reports)
	text, htmlDoc := digestBodies(reports, subject)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range []struct{ ctype, content string }{
		{"text/plain; charset=utf-8", text},
		{"text/html; charset=utf-8", htmlDoc},
	} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {p.ctype},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, fmt.Errorf("composing message: %w", err)
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write([]byte(strings.ToValidUTF8(p.content, "\uFFFD"))); err != nil {
			return nil, fmt.Errorf("composing message: %w", err)
		}
		if err := qp.Close(); err != nil {
			return nil, fmt.Errorf("composing message: %w", err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, fmt.Errorf("composing message: %w", err)
	}

	var msg bytes.Buffer
	for _, h := range [][2]string{
		{"Date", now.Format(time.RFC1123Z)},
		{"From", from.String()},
		{"To", to.String()},
		{"Subject", encodeHeaderText(subject)},
		{"Message-ID", messageID(from, now)},
		{"MIME-Version", "1.0"},
		{"Content-Type", "multipart/alternative; boundary=\"" + mw.Boundary() + "\""},
		{"Auto-Submitted", "auto-generated"},
		{"X-Auto-Response-Suppress", "All"},
	} {
		if err := writeHeader(&msg, h[0], h[1]); err != nil {
			return nil, fmt.Errorf("composing message: %w", err)
		}
	}
	msg.WriteString("\r\n")
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}
