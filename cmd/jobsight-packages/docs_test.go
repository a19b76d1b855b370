package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func repoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Statements of the docs about shipped files and outside behaviour, kept
// to what those files and that behaviour are (issue #33 item 9).
func TestDocsMatchWhatIsShipped(t *testing.T) {
	// The collector's unit: docs/cluster-state.md names its Restart=.
	unit := repoFile(t, "examples/systemd/jobsight-cluster-state.service")
	m := regexp.MustCompile(`(?m)^Restart=(\S+)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("the collector's unit has no Restart=")
	}
	cs := repoFile(t, "docs/cluster-state.md")
	for _, r := range regexp.MustCompile("`Restart=([a-z-]+)`").FindAllStringSubmatch(cs, -1) {
		if r[1] != m[1] {
			t.Errorf("docs/cluster-state.md says Restart=%s; the shipped unit has Restart=%s", r[1], m[1])
		}
	}
	if !strings.Contains(cs, "`Restart="+m[1]+"`") {
		t.Errorf("docs/cluster-state.md does not name the unit's Restart=%s", m[1])
	}

	// A plugin of another Slurm release: at slurmd's default log level
	// (info) Slurm's plugin.c logs "%s: Incompatible Slurm plugin %s
	// version (%d.%02d.%d)" with caller plugin_load_from_file; spank.c's
	// "spank: %s: Incompatible plugin version" is verbose() for optional.
	for _, doc := range []string{"README.md", "docs/packages.md"} {
		s := strings.Join(strings.Fields(repoFile(t, doc)), " ")
		if !strings.Contains(s, "plugin_load_from_file: Incompatible Slurm plugin") {
			t.Errorf("%s does not quote the line slurmd logs at its default level for a stale plugin", doc)
		}
	}

	// OpenSearch is refused by the agents (README): nothing calls it supported.
	for _, doc := range []string{"src/README.md", "pkg/models/settings.go", "docs/site-config.md"} {
		if s := repoFile(t, doc); strings.Contains(s, "(or OpenSearch") {
			t.Errorf("%s offers OpenSearch, which the agents refuse", doc)
		}
	}

	// Hour of week follows the dashboard's time zone (CHANGELOG); the
	// shipped dashboard's is UTC.
	var dash struct {
		Timezone string `json:"timezone"`
	}
	if err := json.Unmarshal([]byte(repoFile(t, "dashboards/cluster-efficiency.json")), &dash); err != nil {
		t.Fatal(err)
	}
	dr := repoFile(t, "dashboards/README.md")
	if !strings.Contains(dr, "weekday, in the dashboard's time zone: UTC as shipped, `\"timezone\": \""+dash.Timezone+"\"`") {
		t.Errorf("dashboards/README.md: hour of week is not said to follow the dashboard's time zone (%q as shipped)", dash.Timezone)
	}

	// The idForwarding toggle exists only up to Grafana 11.2 (removed by
	// grafana/grafana#92209); plugin.json asks for 11.0 or later.
	if p := strings.Join(strings.Fields(repoFile(t, "provisioning/README.md")), " "); strings.Contains(p, "`idForwarding` feature, on by default in recent releases") ||
		!strings.Contains(p, "toggle was removed") {
		t.Error("provisioning/README.md names the idForwarding toggle as a setting of current Grafana releases")
	}

	// One version, VERSION's: the docs say so and no longer describe
	// versions made from git describe.
	for _, f := range []string{"CHANGELOG.md", "docs/packages.md", "README.md"} {
		d := strings.Join(strings.Fields(repoFile(t, f)), " ")
		if f == "CHANGELOG.md" { // its introduction; the entries tell history
			d, _, _ = strings.Cut(d, "## Unreleased")
		}
		if strings.Contains(d, "0.0.0~git") || strings.Contains(d, "from `git describe`") || strings.Contains(d, "from git describe") {
			t.Errorf("%s still describes package versions made from git describe", f)
		}
	}
	if cl := strings.Join(strings.Fields(repoFile(t, "CHANGELOG.md")), " "); !strings.Contains(cl, "the `VERSION` file at the top of the repository") {
		t.Error("CHANGELOG.md's introduction does not name the VERSION file as the one version")
	}
}
