package clusterstate

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/test/stack"
)

// promtool check metrics is clean over every series the collector writes
// (DESIGN.md: names jobsight_<subject>_<what>_<unit> in base units).
func TestSeriesPassPromtool(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("promtool"); err != nil {
		stack.Unavailable(t, "promtool (Debian prometheus) not in PATH")
	}
	byName := map[string][]string{}
	var order []string
	snap := fixtureSnapshot(t)
	snap.Unreported = &Unreported{Jobs: 1, Nodes: []UnreportedNode{{Node: "csnode4", Jobs: 1, Keys: []string{"990943"}}}}
	for _, s := range Series(snap, Health{PollSeconds: 0.1, SlurmCalls: 2}, true) {
		var ls []string
		for _, l := range s.Labels {
			ls = append(ls, fmt.Sprintf("%s=%q", l.Name, l.Value))
		}
		if byName[s.Name] == nil {
			order = append(order, s.Name)
		}
		byName[s.Name] = append(byName[s.Name], fmt.Sprintf("%s{%s} %g", s.Name, strings.Join(ls, ","), s.Samples[0].Value))
	}
	var b bytes.Buffer
	for _, name := range order {
		info, ok := MetricHelp[name]
		if !ok {
			t.Errorf("%s has no MetricHelp entry", name)
		}
		if (info[0] == "counter") != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: counters and only counters end in _total", name)
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s\n", name, info[1], name, info[0], strings.Join(byName[name], "\n"))
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(b.Bytes())
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
