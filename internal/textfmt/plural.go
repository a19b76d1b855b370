// Package textfmt holds the small wording helpers that reports, analyses
// and notification mails share, so that they say things the same way.
package textfmt

import "strconv"

// Plural writes a count with its noun: "1 GPU", "0 GPUs", "3 jobs". The
// plural is the noun with an "s" (every noun counted so far takes one).
func Plural[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun + "s"
}
