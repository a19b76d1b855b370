package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// pageCSS styles the HTML report. The page has no script and its content
// security policy allows none.
const pageCSS = `:root{color-scheme:light}
body{margin:0;background:#f1f5f9;color:#0f172a;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:920px;margin:0 auto;padding:16px 28px 24px;background:#fff}
h1{font-size:1.6em;margin:.2em 0 .4em}
h2{font-size:1.2em;border-bottom:1px solid #e2e8f0;padding-bottom:.15em;margin:1.2em 0 .5em}
h3{font-size:1.02em;margin:.9em 0 .2em}
p{margin:.5em 0}
ul{margin:.3em 0;padding-left:1.5em}
table{border-collapse:collapse;margin:.5em 0;font-size:.95em}
th,td{border:1px solid #e2e8f0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f8fafc;white-space:nowrap}
section.summary td:nth-child(odd),section.usage td:not(:last-child){white-space:nowrap}
section.class ul{padding:0;color:#334155}
section.class li{display:inline}
section.class li+li::before{content:" · "}
pre{background:#f8fafc;border:1px solid #cbd5e1;padding:8px 14px;overflow-x:auto}
code{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:.95em}
blockquote{margin:1em 0;padding:10px 14px;background:#fef3c7;border:2px solid #b45309;color:#451a03;font-size:1.05em}
blockquote p{margin:0}
figure{margin:12px 0}
svg{max-width:100%;height:auto}
hr{border:0;border-top:1px solid #e2e8f0;margin:1.6em 0 .8em}
section.footer{color:#475569;font-size:.9em}
a{color:#1d4ed8}
@media print{body{background:#fff}main{padding:0}}
`

// markdownRenderer converts the report's Markdown. goldmark's default
// HTML renderer is safe: raw HTML in the source is dropped and links to
// dangerous URLs (javascript:, vbscript:, file:, most data:) are not
// written. WithUnsafe is deliberately not set.
func markdownRenderer() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table))
}

// HTML renders the report as a standalone HTML5 page: the Markdown report
// converted by goldmark with raw HTML disabled, inline CSS, up to three SVG
// charts inlined after the text (after the class when the job was not
// analysed or was too short), and no JavaScript (the page's content
// security policy forbids scripts).
func HTML(in Input) (string, error) {
	v := buildView(in)
	md := markdownRenderer()
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n")
	b.WriteString("<meta name=\"referrer\" content=\"no-referrer\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString("<title>" + html.EscapeString("Jobsight report: "+clean(v.title)) + "</title>\n")
	b.WriteString("<style>\n" + pageCSS + "</style>\n</head>\n<body>\n<main>\n")
	for _, s := range markdownSections(v) {
		var buf bytes.Buffer
		if err := md.Convert([]byte(s.md), &buf); err != nil {
			return "", fmt.Errorf("rendering the %s section of the report: %w", s.name, err)
		}
		b.WriteString("<section class=\"" + s.name + "\">\n")
		b.Write(buf.Bytes())
		b.WriteString("</section>\n")
		if s.name == chartsAfter(v) {
			if cs := charts(in); len(cs) > 0 {
				b.WriteString("<section class=\"charts\">\n<h2>Charts</h2>\n")
				for _, c := range cs {
					b.WriteString("<figure>" + c + "</figure>\n")
				}
				b.WriteString("</section>\n")
			}
		}
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.String(), nil
}

// chartsAfter names the section the charts follow: the last one before
// the footer.
func chartsAfter(v *view) string {
	if v.analysed && !v.short {
		return secSavings
	}
	return secClass
}
