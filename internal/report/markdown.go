package report

import (
	"strconv"
	"strings"
)

// section is one part of the Markdown report; name says which, so that the
// HTML page can place its charts after the observed use.
type section struct {
	name string
	md   string
}

const (
	secHeader  = "header"
	secSummary = "summary"
	secUsage   = "usage"
	secClass   = "class"
	secCauses  = "causes"
	secRec     = "recommendation"
	secSavings = "savings"
	secFooter  = "footer"
)

// simulatedNotice is the banner shown on every report with simulated GPU
// data.
const simulatedNotice = "SIMULATED GPU DATA. The GPU figures in this report come from Jobsight's simulated GPU source; they are not measurements of real hardware."

// partialNotice follows the list of what could not be measured.
const partialNotice = "The report is partial: these values are left out, not estimated."

// Markdown renders the report as CommonMark with GitHub tables. Every
// string from the job or its analysis is escaped, so that none can add
// markup; charts are only in the HTML report.
func Markdown(in Input) string {
	return joinSections(markdownSections(buildView(in)))
}

func joinSections(secs []section) string {
	var b strings.Builder
	for i, s := range secs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.md)
	}
	return b.String()
}

func markdownSections(v *view) []section {
	var secs []section
	add := func(name string, b *strings.Builder) {
		secs = append(secs, section{name, b.String()})
	}

	var b strings.Builder
	b.WriteString("# " + mdEscape(v.title) + "\n")
	if v.simulated {
		b.WriteString("\n> **" + mdEscape(simulatedNotice) + "**\n")
	}
	if v.jobURL != "" {
		b.WriteString("\n[Open the job page](" + v.jobURL + ")\n")
	}
	add(secHeader, &b)

	b.Reset()
	// Two columns of label and value: the job on the left, its run on the
	// right.
	b.WriteString("## Job summary\n\n| Job | | Run | |\n|---|---|---|---|\n")
	for i := 0; i < max(len(v.summary), len(v.run)); i++ {
		cells := [4]string{}
		if i < len(v.summary) {
			cells[0], cells[1] = "**"+mdEscape(v.summary[i].label)+"**", mdEscape(v.summary[i].value)
		}
		if i < len(v.run) {
			cells[2], cells[3] = "**"+mdEscape(v.run[i].label)+"**", mdEscape(v.run[i].value)
		}
		b.WriteString("| " + strings.Join(cells[:], " | ") + " |\n")
	}
	add(secSummary, &b)

	b.Reset()
	b.WriteString("## Observed use\n\n| Resource | Requested | Used | Share used |\n|---|---|---|---:|\n")
	for _, r := range v.usage {
		share := "–"
		if r.share != nil {
			share = formatPct(*r.share)
		}
		b.WriteString("| " + mdEscape(r.resource) + " | " + mdEscape(r.requested) + " | " + mdEscape(r.used) + " | " + share + " |\n")
	}
	if v.gpuSummary != "" {
		b.WriteString("\n**GPUs:** " + mdEscape(v.gpuSummary) + "\n")
	}
	if len(v.gpus) > 0 {
		b.WriteString("\n| " + mdEscape(v.gpuLabel) + " | Model | Utilisation avg | p95 | peak | Memory peak / capacity | Notes |\n|---|---|---:|---:|---:|---:|---|\n")
		for _, g := range v.gpus {
			b.WriteString("| " + mdEscape(g.label) + " | " + mdEscape(orDash(g.model)) + " | " + pctOrDash(g.avg) + " | " + pctOrDash(g.p95) + " | " + pctOrDash(g.peak) + " | " + mdEscape(memPair(g.memPeak, g.memTotal)) + " | " + mdEscape(strings.Join(g.notes, "; ")) + " |\n")
		}
	}
	if len(v.activity) > 0 {
		b.WriteString("\n**" + mdEscape(activityHeading) + "**\n\n")
		for _, r := range v.activity {
			b.WriteString("- **" + mdEscape(r.label) + "**: " + mdEscape(r.value()) + "\n")
		}
	}
	if len(v.missing) > 0 {
		b.WriteString("\n**What could not be measured:** " + mdEscape(strings.Join(v.missing, ", ")) + ". " + partialNotice + "\n")
	}
	add(secUsage, &b)

	b.Reset()
	b.WriteString("## Class\n\n")
	if !v.analysed {
		b.WriteString("This job has not been analysed yet.\n")
		add(secClass, &b)
	} else {
		b.WriteString("**" + mdEscape(v.class) + "**")
		if v.score != "" {
			b.WriteString(" — " + mdEscape(v.score))
		}
		b.WriteString("\n")
		if v.explanation != "" {
			b.WriteString("\n" + mdEscape(v.explanation) + "\n")
		}
		if len(v.figures) > 0 {
			b.WriteString("\n")
			for _, f := range v.figures {
				b.WriteString("- " + mdEscape(f.label) + ": " + mdEscape(f.value) + "\n")
			}
		}
		add(secClass, &b)
	}

	if v.analysed && !v.short {
		b.Reset()
		b.WriteString("## Likely causes\n\n")
		if len(v.causes) == 0 {
			b.WriteString("No likely causes of unused resources were identified.\n")
		}
		for i, c := range v.causes {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("### " + strconv.Itoa(i+1) + ". " + mdEscape(c.title) + "\n\n")
			b.WriteString("- Confidence: " + c.confidence + "\n")
			if c.evidence != "" {
				b.WriteString("- Evidence: " + mdEscape(c.evidence) + "\n")
			}
			if c.lesson != "" {
				b.WriteString("- What to try: " + mdEscape(c.lesson) + "\n")
			}
			if c.docURL != "" {
				b.WriteString("- Read more: [" + mdEscape(c.docURL) + "](" + c.docURL + ")\n")
			}
		}
		add(secCauses, &b)

		b.Reset()
		b.WriteString("## Recommendation\n\n")
		if v.recAdvice == "" && len(v.changes) == 0 {
			b.WriteString("No change to the request is suggested.\n")
		}
		if v.recAdvice != "" {
			b.WriteString(mdEscape(v.recAdvice) + "\n")
		}
		if len(v.changes) > 0 {
			if v.recAdvice != "" {
				b.WriteString("\n")
			}
			b.WriteString("Suggested changes to the batch script (advisory):\n\n")
			b.WriteString(fencedDiff(v.changes))
			b.WriteString("\n")
			for _, c := range v.changes {
				if c.reason == "" {
					continue
				}
				name := c.option
				if name == "" {
					name = strings.TrimPrefix(orDash(c.plus), "#SBATCH ")
				}
				b.WriteString("- **" + mdEscape(name) + "**: " + mdEscape(c.reason) + "\n")
			}
		}
		if v.advise != "" {
			b.WriteString("\n" + mdEscape(adviseSentence) + "\n\n```sh\n" + v.advise + "\n```\n")
		}
		add(secRec, &b)

		b.Reset()
		b.WriteString("## Estimated savings\n\n")
		if s := v.savingsSentence(); s != "" {
			b.WriteString(mdEscape(s) + "\n")
		} else {
			b.WriteString("No savings were estimated.\n")
		}
		add(secSavings, &b)
	}

	b.Reset()
	b.WriteString("---\n\n" + mdEscape(v.footer) + "\n")
	add(secFooter, &b)
	return secs
}

// diffLines are the #SBATCH changes as diff lines ("-#SBATCH --gpus=4").
func diffLines(ch []changeView) []string {
	var lines []string
	for _, c := range ch {
		if c.minus != "" {
			lines = append(lines, "-"+c.minus)
		}
		if c.plus != "" {
			lines = append(lines, "+"+c.plus)
		}
	}
	return lines
}

// fencedDiff writes the changes as a fenced diff block whose fence is
// longer than any run of backticks in it, so that no value can close it.
func fencedDiff(ch []changeView) string {
	lines := diffLines(ch)
	body := strings.Join(lines, "\n")
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "diff\n" + body + "\n" + fence + "\n"
}

func pctOrDash(r *float64) string {
	if r == nil {
		return "–"
	}
	return formatPct(*r)
}

// memPair writes "31.2 GiB / 80.0 GiB", with "–" for what is missing.
func memPair(used, total *int64) string {
	u, t := "–", "–"
	if used != nil {
		u = formatBytes(*used)
	}
	if total != nil {
		t = formatBytes(*total)
	}
	if used == nil && total == nil {
		return "–"
	}
	return u + " / " + t
}
