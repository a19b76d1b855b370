// Package examples loads the sample configuration files in examples/ with
// the loaders the programs use, so that a file a site admin copies is
// always one the programs accept.
package examples

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentconfig "github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/site/feedback"
)

const dir = "../../examples"

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	loaders := map[string]func(string) error{
		"agent.yaml":         func(p string) error { _, err := agentconfig.Load(p); return err },
		"site.yaml":          func(p string) error { _, err := feedback.LoadConfig(p); return err },
		"cluster-state.yaml": func(p string) error { _, err := clusterstate.LoadConfig(p); return err },
		"constants.yaml": func(p string) error {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = clusterstate.ParseConstants(f)
			return err
		},
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		load, ok := loaders[name]
		if !ok {
			t.Errorf("%s: no loader knows this example", name)
			continue
		}
		if err := load(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		delete(loaders, name)
	}
	for name := range loaders {
		t.Errorf("examples/%s is missing", name)
	}
}

// TestExamplesKeepSecretsInFiles: no example holds a password or token
// itself; they name files.
func TestExamplesKeepSecretsInFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			key, _, _ := strings.Cut(strings.TrimSpace(line), ":")
			if key == "password" || key == "bearer_token" || key == "token" {
				t.Errorf("%s:%d: a secret written into the file; use %s_file", filepath.Base(f), i+1, key)
			}
		}
	}
}
