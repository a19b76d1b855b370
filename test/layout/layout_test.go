// Package layout checks that the repository keeps the shape the README's
// repository map draws: every binary under cmd/ (the plugin backend's
// pkg/main.go aside, where Grafana's tooling expects it); agent/ only what
// runs on compute nodes, pkg/ only the plugin backend, internal/ the core
// they share, which imports neither; test harnesses under test/, imported
// by no product code; and no product but the plugin linking the Grafana
// plugin SDK.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/jobsight/jobsight/"

type pkg struct {
	path    string // relative to the module
	name    string
	imports []string // module-relative imports of the non-test files
	deps    []string // every dependency (full paths)
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}|{{.Name}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var ps []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 || !strings.HasPrefix(f[0], module) {
			continue // node_modules and other trees that are not ours
		}
		p := pkg{path: strings.TrimPrefix(f[0], module), name: f[1], deps: strings.Fields(f[3])}
		for _, imp := range strings.Fields(f[2]) {
			if strings.HasPrefix(imp, module) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, module))
			}
		}
		ps = append(ps, p)
	}
	if len(ps) < 20 {
		t.Fatalf("go list found only %d packages of the module", len(ps))
	}
	return ps
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

func TestLayout(t *testing.T) {
	for _, p := range list(t) {
		top, _, _ := strings.Cut(p.path, "/")
		if p.name == "main" && top != "cmd" && p.path != "pkg" {
			t.Errorf("%s is a binary outside cmd/", p.path)
		}
		// What each home may import from the others.
		forbidden := map[string][]string{
			"internal": {"agent", "pkg", "test", "cmd"},
			"agent":    {"pkg", "test", "cmd"},
			"pkg":      {"agent", "test", "cmd"},
			"cmd":      {"pkg"},
		}[top]
		for _, imp := range p.imports {
			for _, dir := range forbidden {
				if under(imp, dir) {
					t.Errorf("%s (%s/) imports %s: %s/ may not depend on %s/", p.path, top, imp, top, dir)
				}
			}
			// Only the local stack and the benchmark, test tools
			// themselves, use the test harnesses.
			if top == "cmd" && under(imp, "test") && p.path != "cmd/jobsight-stack" && p.path != "cmd/jobsight-bench" {
				t.Errorf("%s imports the test harness %s", p.path, imp)
			}
		}
		// The Grafana plugin SDK belongs to the plugin (and the tests
		// that drive it), not to the agent or the site command.
		if top == "agent" || top == "internal" || p.path == "cmd/jobsight" || p.path == "cmd/jobsight-agent" {
			for _, d := range p.deps {
				if strings.HasPrefix(d, "github.com/grafana/grafana-plugin-sdk-go") {
					t.Errorf("%s links the Grafana plugin SDK (%s)", p.path, d)
					break
				}
			}
		}
	}
}
