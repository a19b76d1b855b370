// Package textfmt holds the small wording helpers that reports, analyses
// and notification mails share, so that they say things the same way.
package textfmt

import (
	"strconv"
	"strings"
)

// Plural writes a count with its noun: "1 GPU", "0 GPUs", "3 jobs", "2
// processes". The plural is the noun with an "s", or "es" after s, x, ch
// and sh (the regular English plurals; no noun counted so far is
// irregular).
func Plural[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	suffix := "s"
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			suffix = "es"
			break
		}
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun + suffix
}
