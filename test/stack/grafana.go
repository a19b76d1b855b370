package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jobsight/jobsight/pkg/models"
)

// GrafanaOptions configures StartGrafana.
type GrafanaOptions struct {
	// Binary is the grafana executable a site or developer installed
	// (Grafana's own packages or release archive); FindGrafana's answer
	// when empty. This project never builds or ships Grafana's server.
	Binary string
	// Home is Grafana's home path (the directory holding public/ and
	// conf/); found beside Binary or in /usr/share/grafana when empty.
	Home string
	// Env is Grafana's extra environment: the provisioning files'
	// placeholders (JOBSIGHT_ES_URL, ...) are read from it.
	Env []string
	// Alerting, when set, is a directory of alert provisioning files used
	// instead of the repository's provisioning/alerting.
	Alerting string
}

// Grafana is a running Grafana server with the Jobsight plugin installed
// unsigned from the repository's build and the repository's provisioning/
// and dashboards/ loaded as shipped.
type Grafana struct {
	*Server
	Admin         string // admin login
	AdminPassword string
	Home          string // Grafana's home path
}

// ErrNoGrafana says that no Grafana server was found: none on PATH and
// none given.
var ErrNoGrafana = errors.New("no grafana executable on PATH: install Grafana 11, 12 or 13 from Grafana's packages and pass its binary with --grafana (this project never builds Grafana's server)")

// FindGrafana returns the grafana executable and its home path: bin when
// given, else "grafana" (then "grafana-server") on PATH; the home is home
// when given, else the binary's parent directory when it holds public/
// (a release archive), else /usr/share/grafana (the packages).
func FindGrafana(bin, home string) (string, string, error) {
	if bin == "" {
		for _, name := range []string{"grafana", "grafana-server"} {
			if p, err := exec.LookPath(name); err == nil {
				bin = p
				break
			}
		}
		if bin == "" {
			return "", "", ErrNoGrafana
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return "", "", fmt.Errorf("grafana binary: %w", err)
	}
	if home == "" {
		resolved, err := filepath.EvalSymlinks(bin)
		if err != nil {
			resolved = bin
		}
		for _, cand := range []string{filepath.Dir(filepath.Dir(resolved)), "/usr/share/grafana"} {
			if _, err := os.Stat(filepath.Join(cand, "public")); err == nil {
				home = cand
				break
			}
		}
		if home == "" {
			return "", "", fmt.Errorf("found %s but not Grafana's home path (a directory with public/ and conf/): give it", bin)
		}
	}
	return bin, home, nil
}

// StartGrafana installs the plugin (backend built now, frontend from dist/,
// rebuilt when src/ is newer) under dir/plugins, copies the repository's
// provisioning/ there, writes a configuration and starts Grafana on a free
// port of 127.0.0.1, returning once its API answers and the plugin is
// loaded.
func StartGrafana(ctx context.Context, dir string, opts GrafanaOptions) (*Grafana, error) {
	bin, home, err := FindGrafana(opts.Binary, opts.Home)
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	plugins := filepath.Join(dir, "plugins")
	if err := installPlugin(ctx, root, filepath.Join(plugins, models.PluginID)); err != nil {
		return nil, err
	}
	prov := filepath.Join(dir, "provisioning")
	if err := copyTree(filepath.Join(root, "provisioning"), prov); err != nil {
		return nil, fmt.Errorf("copying provisioning/: %w", err)
	}
	if opts.Alerting != "" {
		if err := os.RemoveAll(filepath.Join(prov, "alerting")); err != nil {
			return nil, err
		}
		if err := copyTree(opts.Alerting, filepath.Join(prov, "alerting")); err != nil {
			return nil, fmt.Errorf("copying %s: %w", opts.Alerting, err)
		}
	}
	// Grafana reads these directories as its own user; the stack runs as
	// root, so nothing needs chown.
	for _, d := range []string{"data", "logs", filepath.Join(prov, "plugins"), filepath.Join(prov, "notifiers")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	g := &Grafana{Admin: "admin", AdminPassword: hex.EncodeToString(r[:]), Home: home}
	ini := fmt.Sprintf(`# Written by the Jobsight test stack.
[paths]
data = %[1]s/data
logs = %[1]s/logs
plugins = %[2]s
provisioning = %[3]s

[server]
http_addr = 127.0.0.1
http_port = %[4]d
root_url = http://127.0.0.1:%[4]d/

[security]
admin_user = %[5]s
admin_password = %[6]s

[analytics]
reporting_enabled = false
check_for_updates = false
check_for_plugin_updates = false
feedback_links_enabled = false

[news]
news_feed_enabled = false

[plugins]
allow_loading_unsigned_plugins = %[7]s

[users]
default_theme = light

[unified_alerting]
enabled = true
min_interval = 10s

[alerting]
enabled = false

[log]
mode = console
level = info
`, dir, plugins, prov, port, g.Admin, g.AdminPassword, models.PluginID)
	conf := filepath.Join(dir, "grafana.ini")
	if err := os.WriteFile(conf, []byte(ini), 0o600); err != nil {
		return nil, err
	}
	env := append([]string{"JOBSIGHT_DASHBOARDS_DIR=" + filepath.Join(root, "dashboards")}, opts.Env...)
	args := []string{"server", "--homepath", home, "--config", conf}
	if filepath.Base(bin) == "grafana-server" {
		args = args[1:] // the older, single-purpose executable
	}
	s, err := startProcess("grafana", dir, env, bin, args...)
	if err != nil {
		return nil, err
	}
	g.Server = s
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.waitHTTP(wctx, s.URL+"/api/health"); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return g, nil
}

// installPlugin lays out the plugin as Grafana loads it: dist/'s frontend
// (module.js, plugin.json, img/) and the backend executable built now.
func installPlugin(ctx context.Context, root, dest string) error {
	if err := frontendBuilt(ctx, root); err != nil {
		return err
	}
	if err := copyTree(filepath.Join(root, "dist"), dest); err != nil {
		return fmt.Errorf("copying the plugin's dist/: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dest, "gpx_jobsight_linux_amd64"), "./pkg")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the plugin backend: %w\n%s", err, out)
	}
	return nil
}

// frontendBuilt runs npm run build when dist/module.js is missing or older
// than a file under src/ or plugin.json.
func frontendBuilt(ctx context.Context, root string) error {
	built, err := os.Stat(filepath.Join(root, "dist", "module.js"))
	stale := err != nil
	if !stale {
		newest := time.Time{}
		_ = filepath.WalkDir(filepath.Join(root, "src"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
					newest = fi.ModTime()
				}
			}
			return nil
		})
		if fi, err := os.Stat(filepath.Join(root, "plugin.json")); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		stale = newest.After(built.ModTime())
	}
	if !stale {
		return nil
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules")); err != nil {
		return fmt.Errorf("the plugin frontend is not built and node_modules/ is missing: run npm ci and npm run build in %s", root)
	}
	cmd := exec.CommandContext(ctx, "npm", "run", "build")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm run build: %w\n%s", err, lastBytes(out, 4000))
	}
	return nil
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		// Test harness: src is this checkout's provisioning/ or dist/ (or a
		// test's alerting rules), dst the test Grafana's own directory;
		// links were skipped above, so path is a regular file of src.
		b, err := os.ReadFile(path) // #nosec G122 -- see above
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644) // #nosec G703 -- see above
	})
}

// Describe writes where Grafana answers and how to log in.
func (g *Grafana) Describe() string {
	return fmt.Sprintf("Grafana %s  login %s / %s, log %s", g.URL, g.Admin, g.AdminPassword, g.Log)
}

// GrafanaEnv is GrafanaOptions.Env for this stack's Elasticsearch and
// Prometheus: the placeholders of provisioning/datasources/jobsight.yaml.
func (s *Stack) GrafanaEnv() []string {
	env := []string{"JOBSIGHT_PROMETHEUS_URL=" + s.Prometheus.URL}
	if es := s.Elasticsearch; es != nil {
		env = append(env, "JOBSIGHT_ES_URL="+es.URL, "JOBSIGHT_ES_USER="+es.User, "JOBSIGHT_ES_PASSWORD="+es.Password)
	}
	return env
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
