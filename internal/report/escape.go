package report

import (
	"net/url"
	"strings"
	"unicode"
)

// maxUserString caps the length (in runes) of any one string taken from
// the job or its analysis, so that no field can swamp the report.
const maxUserString = 600

// clean makes a string from the job or its analysis safe to place on one
// line of any output: control characters (terminal escapes included),
// line and paragraph separators and bidirectional overrides become spaces,
// runs of spaces collapse, and overlong strings are cut with an ellipsis.
func clean(s string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || isBidiControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Zs, r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
				n++
			}
			space = true
			continue
		}
		if n >= maxUserString {
			b.WriteString("…")
			break
		}
		space = false
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// isBidiControl reports the Unicode bidirectional formatting characters,
// which can make text display in an order other than the one it is stored
// in.
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f' || r == '\u061c'
}

// mdEscape cleans s and backslash-escapes every character that could start
// Markdown markup inline (emphasis, links, images, code, raw HTML, entity
// references, table cells, strikethrough), and a leading character that
// could start a block (heading, list, quote) when s begins a line.
// CommonMark allows any ASCII punctuation to be escaped, and an escaped
// character always renders as itself.
func mdEscape(s string) string {
	s = clean(s)
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '&', '|', '~', '!', '#':
			b.WriteByte('\\')
		case '+', '-', '=':
			if i == 0 && startsBlock(s) {
				b.WriteByte('\\')
			}
		case '.', ')':
			if i > 0 && allDigits(s[:i]) && (i+1 == len(s) || s[i+1] == ' ') {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// startsBlock reports whether s, at the start of a line, would begin a
// list item ("- x", "+ x"), a thematic break or a setext underline ("---",
// "===").
func startsBlock(s string) bool {
	if len(s) == 1 || s[1] == ' ' {
		return true
	}
	return strings.Trim(s, string(s[0])+" ") == ""
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// safeURL returns u as an absolute http or https URL with every character
// that could end a Markdown link destination or an HTML attribute
// percent-encoded, or false when u is anything else (javascript:, data:,
// relative, unparsable).
func safeURL(u string) (string, bool) {
	u = strings.TrimSpace(u)
	if u == "" || len(u) > 2048 {
		return "", false
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
		return "", false
	}
	s := p.String()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("<>\"'`()[]\\{}|^", c) >= 0 {
			b.WriteString("%" + strings.ToUpper(hex2(c)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
