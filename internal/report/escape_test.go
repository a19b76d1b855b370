package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"golang.org/x/net/html"
)

// Strings a user controls (job name, account, node names...) or a site
// configures (cause text), each trying to get markup into the report.
var hostile = []string{
	`<script>alert(1)</script>`,
	`**bold** [x](javascript:alert(1))`,
	`</svg><img src=x onerror=alert(1)>`,
	`"><svg onload=alert(1)>`,
	`<a href="javascript:alert(1)">x</a>`,
	`![i](javascript:alert(1)) <javascript:alert(1)>`,
	"```\n<script>alert(1)</script>\n```",
	`&lt;script&gt;alert(1)&lt;/script&gt;`,
	`a|b|c <!-- x --> <?php x ?> <![CDATA[x]]>`,
	"\x1b[31mred\x1b]0;title\x07 \u202eevil\u202c \r\n# heading\n- item",
}

func hostileInput(payload string) Input {
	in := gpu4HeldIdle()
	j := &in.Job
	j.Cluster, j.JobID, j.Name, j.User, j.Account, j.Partition, j.QOS, j.Reason = payload, payload, payload, payload, payload, payload, payload, payload
	j.Nodes = []string{payload, "n2"}
	for i := range j.GPUs {
		j.GPUs[i].Node = payload
		j.GPUs[i].Model = payload
		j.GPUs[i].Partition = payload
		j.GPUs[i].MissingMetrics = []string{payload}
	}
	j.GPUs[3].Node = "other" // two nodes: GPU names carry the node name
	j.GPU.Source, j.GPU.Attribution = payload, payload
	j.MissingMetrics = []string{payload, "node:" + payload, "samples_after_agent_loss:" + payload}
	a := in.Analysis
	a.Class = payload
	a.MissingMetrics = []string{payload}
	for i := range a.Causes {
		c := &a.Causes[i]
		c.Title, c.Evidence, c.Lesson, c.DocURL = payload, payload, payload, "javascript:alert(1)"
	}
	a.Causes = append(a.Causes, jobmodel.Cause{Title: "link", DocURL: "https://example.org/a?x=" + payload})
	for i := range a.Recommendation.Changes {
		c := &a.Recommendation.Changes[i]
		c.Option, c.From, c.To, c.Reason = payload, payload, "--x="+payload, payload
	}
	in.JobURL = "javascript:alert(1)"
	t0 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	in.Series = &Series{
		GPUUtilization: []GPUSeries{
			{Node: payload, Index: 0, Points: []Point{{t0, 0.5}, {t0.Add(time.Hour), 0.7}}},
			{Node: "n2", Index: 1, Points: []Point{{t0, 0.1}, {t0.Add(time.Hour), 0.2}}},
		},
		MemoryUsed: []NodeSeries{{Node: payload, Points: []Point{{t0, 1e9}, {t0.Add(time.Hour), 2e9}}}},
	}
	return in
}

// allowedElements is every element the HTML report may contain.
var allowedElements = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "main": true, "section": true,
	"h1": true, "h2": true, "h3": true, "p": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
	"strong": true, "em": true, "ul": true, "li": true, "a": true, "pre": true, "code": true, "blockquote": true, "hr": true,
	"figure": true, "svg": true, "desc": true, "text": true, "rect": true, "line": true, "path": true,
}

// checkNoLiveMarkup fails on any element outside allowedElements, any
// event-handler attribute and any link or source that is not http(s).
func checkNoLiveMarkup(t *testing.T, page string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			if !allowedElements[n.Data] {
				t.Errorf("element <%s> in the report", n.Data)
			}
			if n.Data == "script" {
				t.Errorf("script element in the report")
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if strings.HasPrefix(key, "on") {
					t.Errorf("event handler attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				val := strings.ToLower(strings.Join(strings.FieldsFunc(a.Val, func(r rune) bool { return r <= ' ' }), ""))
				if strings.HasPrefix(val, "javascript:") || strings.HasPrefix(val, "vbscript:") || strings.HasPrefix(val, "data:") {
					t.Errorf("javascript: URL in %s on <%s>", a.Key, n.Data)
				}
				if key == "href" && !strings.HasPrefix(val, "https://") && !strings.HasPrefix(val, "http://") {
					t.Errorf("link to %q", a.Val)
				}
				if key == "src" || key == "srcdoc" || key == "formaction" || key == "xlink:href" {
					t.Errorf("attribute %s on <%s>", a.Key, n.Data)
				}
			}
		case html.CommentNode:
			// goldmark writes "raw HTML omitted" comments; nothing else.
			if !strings.Contains(n.Data, "raw HTML omitted") {
				t.Errorf("comment %q in the report", n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// textContent is the text of a parsed HTML document, entities decoded,
// style sheets left out.
func textContent(t *testing.T, page string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "style" {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return b.String()
}

func TestHTMLEscapesUserStrings(t *testing.T) {
	for _, payload := range hostile {
		in := hostileInput(payload)
		page, err := HTML(in)
		if err != nil {
			t.Fatal(err)
		}
		checkNoLiveMarkup(t, page)
		if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "<img") {
			t.Errorf("payload %q: raw tag in the page", payload)
		}
		// The payload is shown as text, not dropped.
		if want := clean(payload); !strings.Contains(textContent(t, page), want) {
			t.Errorf("payload %q: its text %q is not in the page", payload, want)
		}
	}
}

func TestMarkdownEscapesUserStrings(t *testing.T) {
	for _, payload := range hostile {
		md := Markdown(hostileInput(payload))
		var buf bytes.Buffer
		if err := markdownRenderer().Convert([]byte(md), &buf); err != nil {
			t.Fatal(err)
		}
		checkNoLiveMarkup(t, buf.String())
		if strings.Contains(buf.String(), "raw HTML omitted") {
			t.Errorf("payload %q reached goldmark as raw HTML", payload)
		}
	}
}

// TestMDEscapeRendersItself checks that an escaped string renders as
// exactly its (cleaned) text wherever the report puts one: mid-line, at
// the start of a line, in a list item, a heading and a table cell.
func TestMDEscapeRendersItself(t *testing.T) {
	cases := append([]string{
		"1. numbered", "2) numbered", "- dash", "+ plus", "* star", "# hash", "> quote", "---", "===", "- - -",
		"    indented", "<div>", "&amp;", "&#60;", "a|b", "`x`", "``", "_under_", "~~strike~~", "\\", "\\*",
		"[x]: https://example.org", "--gpus", "256.0 GiB", "12.", "x  ", "[^1]", "***", "<http://x>", "www.example.org",
	}, hostile...)
	templates := []struct{ src, want string }{
		{"%s", "%s"}, {"x %s y", "x %s y"}, {"- %s", "%s"}, {"### %s", "%s"}, {"| a |\n|---|\n| %s |", "a%s"},
	}
	for _, s := range cases {
		for _, tmpl := range templates {
			src := strings.Replace(tmpl.src, "%s", mdEscape(s), 1)
			var buf bytes.Buffer
			if err := markdownRenderer().Convert([]byte(src), &buf); err != nil {
				t.Fatal(err)
			}
			// Whitespace is compared loosely: HTML does not keep it.
			got := strings.Join(strings.Fields(textContent(t, buf.String())), " ")
			want := strings.Join(strings.Fields(strings.Replace(tmpl.want, "%s", clean(s), 1)), " ")
			if strings.HasPrefix(tmpl.src, "|") {
				got, want = strings.ReplaceAll(got, " ", ""), strings.ReplaceAll(want, " ", "")
			}
			if got != want {
				t.Errorf("mdEscape(%q) in %q renders as %q, want %q\nHTML: %s", s, tmpl.src, got, want, buf.String())
			}
		}
	}
}

var knownANSI = regexp.MustCompile(`\x1b\[(0|1|2|31|32|36|1;30;43)m`)

func TestTextStripsControlCharacters(t *testing.T) {
	for _, payload := range hostile {
		in := hostileInput(payload)
		plain := Text(in, false)
		if strings.ContainsAny(plain, "\x1b\x07\r\u202e\u202c") {
			t.Errorf("payload %q: control character in the plain text", payload)
		}
		coloured := knownANSI.ReplaceAllString(Text(in, true), "")
		if strings.ContainsAny(coloured, "\x1b\x07\r\u202e\u202c") {
			t.Errorf("payload %q: control character in the coloured text beyond the report's own styles", payload)
		}
	}
}

func TestSafeURL(t *testing.T) {
	for _, u := range []string{"javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
		"data:text/html,<script>alert(1)</script>", "vbscript:x", "//evil.example", "/relative", "file:///etc/passwd",
		"https://user:pw@example.org/", "https:///nohost", ""} {
		if got, ok := safeURL(u); ok {
			t.Errorf("safeURL(%q) = %q, want rejected", u, got)
		}
	}
	got, ok := safeURL(`https://example.org/a b?q=<x>&r=(1)"'`)
	if !ok || strings.ContainsAny(got, " <>()\"'") {
		t.Errorf("safeURL kept characters that end a link: %q %v", got, ok)
	}
}

// The advise command in a report is copied into a shell: a job name,
// account or partition that is not plain is left out, never quoted.
func TestAdviseCommandShowsOnlyPlainValues(t *testing.T) {
	job := jobmodel.Job{Name: "x; rm -rf ~ `id` $(id)", Account: "-A", Partition: "gpu",
		Requested:        jobmodel.Request{CPUs: jobmodel.Ptr(int64(8)), Tasks: jobmodel.Ptr(int64(2)), MemoryPerNodeBytes: jobmodel.Ptr(int64(16 << 30))},
		TimeLimitSeconds: jobmodel.Ptr(int64(7200))}
	got := adviseCommand(job)
	if want := "jobsight advise -p gpu -n 2 -c 4 --mem 16G -t 02:00:00"; got != want {
		t.Errorf("adviseCommand = %q, want %q", got, want)
	}
	job.Name = "train_v2.1"
	if got := adviseCommand(job); !strings.HasSuffix(got, " -J train_v2.1") {
		t.Errorf("a plain name left out: %q", got)
	}
}
