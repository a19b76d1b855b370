package grafana

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginInstalledFromArchive: the plugin under test is the one a site
// installs, unpacked from the release archive: Grafana finds everything it
// loads there (plugin.json with the release's version, module.js, the
// catalogue page, CHANGELOG, LICENSE, an executable per platform the
// archive claims), and the running backend came from it.
func TestPluginInstalledFromArchive(t *testing.T) {
	need(t)
	if installed == nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the plugin was not installed from its archive")
		}
		t.Skip("JOBSIGHT_PLUGIN_ARCHIVE not set: the backend was built from the working tree")
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(repoRoot, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if installed.Version != pkg.Version || installed.ID != "jobsight-slurm-datasource" {
		t.Errorf("installed %s %s, want jobsight-slurm-datasource %s", installed.ID, installed.Version, pkg.Version)
	}
	for _, f := range []string{"plugin.json", "module.js", "README.md", "CHANGELOG.md", "LICENSE", "img/logo.svg",
		"gpx_jobsight_linux_amd64", "gpx_jobsight_linux_arm64"} {
		st, err := os.Stat(filepath.Join(installed.Dir, f))
		if err != nil {
			t.Errorf("the installed plugin lacks %s: %v", f, err)
			continue
		}
		if strings.HasPrefix(f, "gpx_") && st.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", f, st.Mode())
		}
	}
	pj, _ := os.ReadFile(filepath.Join(installed.Dir, "plugin.json"))
	if strings.Contains(string(pj), "%VERSION%") || strings.Contains(string(pj), "%TODAY%") {
		t.Errorf("plugin.json keeps a placeholder: %s", pj)
	}
	if !strings.HasPrefix(installed.Executable, installed.Dir+string(os.PathSeparator)) {
		t.Errorf("the backend under test %s is not the installed one in %s", installed.Executable, installed.Dir)
	}
}

// collectorServesOnlyWithItsToken: the cluster-state collector, listening
// on every address as where Grafana runs elsewhere, refuses /constants and
// /metrics without its bearer token; the provisioned datasource sends it
// (the allocation panels in the dashboard tests read through it). Run by
// TestGrafanaSide once jobs are stored.
func (e *env) collectorServesOnlyWithItsToken(t *testing.T) {
	url := e.provEnv["JOBSIGHT_ALLOCATIONS_URL"]
	for _, path := range []string{url, strings.TrimSuffix(url, "/constants") + "/metrics"} {
		for _, auth := range []string{"", "Bearer not-the-token"} {
			req, _ := http.NewRequest(http.MethodGet, path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with %q: HTTP %d, want 401", path, auth, resp.StatusCode)
			}
		}
	}
	// The datasource reads the allocations with the provisioned token.
	// The datasource reads the allocations with the provisioned token: the
	// collector's 100 GPU-hours appear (a refused fetch is a query error).
	fs := e.query(t, admin, map[string]any{"queryType": "allocation", "resources": []string{"gpu"}})
	found := 0.0
	for _, f := range fs {
		for _, fld := range f.Fields {
			if fld.Labels["kind"] != "allocation" {
				continue
			}
			for i := 0; i < fld.Len(); i++ {
				if v, ok := fld.ConcreteAt(i); ok {
					if x, ok := v.(float64); ok && x > found {
						found = x
					}
				}
			}
		}
	}
	if found != 100 {
		t.Errorf("allocation from the collector: %v GPU-hours, want 100 (its constants file)", found)
	}
}
