// Package report renders the post-job report of a Slurm job: what the job
// reserved, what it used, the efficiency class its analysis gave it, the
// likely causes, the advisory #SBATCH changes and what they would have
// freed for others.
//
// The report is rendered from a job document (jobmodel.Job), its analysis
// (jobmodel.Analysis) and, where Prometheus has them, time series of GPU
// utilisation and memory. It comes in three forms from one set of facts:
// Markdown, a standalone HTML page (the Markdown rendered by goldmark with
// raw HTML disabled, plus server-side SVG charts, no JavaScript) and plain
// text in the spirit of Slurm's seff, with optional ANSI colour.
//
// Nothing is rendered that is not in the inputs: a value that was not
// measured is shown as not measured and named in the "what could not be
// measured" line, never as zero. Every string that comes from the job or
// its analysis (job name, user, account, partition, node names, cause text)
// is escaped for the output it lands in: Markdown punctuation is
// backslash-escaped, HTML and SVG text is entity-escaped, and control and
// bidirectional-override characters are removed from all three forms.
package report
