// Package grafanae2e tests what users and admins meet — the shipped
// dashboards, provisioning and hogging alert rules — in a real Grafana
// server (10.0, built from source with its web UI by
// scripts/build-grafana.sh) with the Jobsight plugin installed unsigned,
// over a real Slurm cluster whose jobs the agents record in a real
// Elasticsearch-API server and Prometheus. Through Grafana's HTTP API it runs
// every panel of every dashboard as an admin and as a Viewer, and watches
// the provisioned alert rules fire for a hogging job and stay quiet for
// the others; then it runs the browser tests (e2e/grafana/browser,
// Playwright with @grafana/plugin-e2e on Debian's Chromium) against the same
// server.
//
// It has a stack of its own (cluster "gfe2e", two nodes), so the cluster
// state it writes for the alert rules does not meet the agent tests'.
// JOBSIGHT_E2E_KEEP=1 keeps everything running for an hour after the tests
// and prints the login; JOBSIGHT_SCREENSHOTS=DIR writes each dashboard's
// screenshot there (make screenshots).
package grafanae2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/agent/sink/elasticsearch"
	"github.com/jobsight/jobsight/internal/stack"
	"github.com/jobsight/jobsight/pkg/jobmodel"
)

const (
	cluster  = "gfe2e"
	repoRoot = "../.."
	jobWait  = 90 * time.Second
)

type env struct {
	st  *stack.Stack
	gf  *stack.Grafana
	dir string
}

var (
	shared   *env
	setupErr error
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		if os.Geteuid() != 0 {
			setupErr = fmt.Errorf("needs root")
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "jobsight-grafana-e2e-")
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		e, stop, err := start(ctx, dir)
		if err != nil {
			setupErr = err
			return m.Run()
		}
		defer stop()
		shared = e
		code := m.Run()
		if code != 0 {
			stack.DumpLog(e.gf.Log, 15000)
		}
		if os.Getenv("JOBSIGHT_E2E_KEEP") != "" {
			e.st.Describe(os.Stderr)
			fmt.Fprintln(os.Stderr, e.gf.Describe())
			fmt.Fprintln(os.Stderr, "JOBSIGHT_E2E_KEEP set: sleeping 1h before teardown")
			time.Sleep(time.Hour)
		}
		return code
	}())
}

// start brings up the cluster, the agents, a cluster-state collector
// polling every 5 s and Grafana with the test's copy of the alert rules.
func start(ctx context.Context, dir string) (*env, func(), error) {
	agent, plugin, err := stack.BuildAgent(ctx, repoRoot, filepath.Join(dir, "bin"))
	if err != nil {
		return nil, nil, err
	}
	st, err := stack.Up(ctx, dir, stack.Options{
		Slurm: stack.SlurmOptions{ClusterName: cluster, NodeName: "gnode1", GPUs: 8, ExtraNodes: []string{"gnode2"}},
		Agent: &stack.AgentOptions{Binary: agent, Plugin: plugin,
			Extra: "store_job_name: true\ngpu: {backend: simulated, simulated: {devices: 8, profile: one-of-n}}\n" +
				"analysis: {short_job: 5s}\n"},
	})
	if err != nil {
		return nil, nil, err
	}
	stops := []func(){func() { st.Down() }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	// The site's cluster-state collector, as deployed: the contention the
	// hogging rules weigh by, and the allocations (its /constants) the
	// allocations dashboard draws.
	allocURL, csStop, err := startClusterState(ctx, dir, st)
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, csStop)

	alerting, err := testAlertRules(filepath.Join(dir, "alerting"))
	if err != nil {
		stop()
		return nil, nil, err
	}
	gf, err := stack.StartGrafana(ctx, filepath.Join(dir, "grafana"), stack.GrafanaOptions{Env: append(st.GrafanaEnv(), "JOBSIGHT_ALLOCATIONS_URL="+allocURL), Alerting: alerting})
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, func() { _ = gf.Stop() })
	return &env{st: st, gf: gf, dir: dir}, stop, nil
}

// startClusterState builds the site command and runs `jobsight
// cluster-state` against the cluster every 5 s, serving allocations for the
// test cluster at the returned URL.
func startClusterState(ctx context.Context, dir string, st *stack.Stack) (string, func(), error) {
	csDir := filepath.Join(dir, "cluster-state")
	if err := os.MkdirAll(csDir, 0o755); err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "bin", "jobsight")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/jobsight")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the site command: %w\n%s", err, out)
	}
	port, err := stack.FreePort()
	if err != nil {
		return "", nil, err
	}
	constants := fmt.Sprintf(`allocations:
  - {cluster: %[1]s, resource: gpu, hours: 100}
  - {cluster: %[1]s, resource: cpu, hours: 1000}
  - {cluster: %[1]s, account: dashboards, resource: gpu, hours: 10}
`, cluster)
	config := fmt.Sprintf(`cluster: %s
interval: 5s
listen: 127.0.0.1:%d
constants_file: %s
slurm: {conf: %s}
prometheus: {remote_write_url: %s/api/v1/write}
spool: {dir: %s}
`, cluster, port, filepath.Join(csDir, "constants.yaml"), st.Slurm.Conf, st.Prometheus.URL, filepath.Join(csDir, "spool"))
	for name, text := range map[string]string{"constants.yaml": constants, "cluster-state.yaml": config} {
		if err := os.WriteFile(filepath.Join(csDir, name), []byte(text), 0o644); err != nil {
			return "", nil, err
		}
	}
	logf, err := os.Create(filepath.Join(csDir, "cluster-state.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "cluster-state", "--config", filepath.Join(csDir, "cluster-state.yaml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/constants")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base + "/constants", stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(logf.Name())
			return "", nil, fmt.Errorf("jobsight cluster-state did not serve /constants: %v\n%s", err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Alert windows of the test's copy of the shipped rules: the shipped ones
// wait 30 minutes of idleness and 5 minutes pending; the test waits 60 s
// and 10 s, evaluating every 10 s. Nothing else of the rules changes.
var alertRuleEdits = [][2]string{
	{"from: 1800", "from: 60"},
	{"windowSeconds: 1800", "windowSeconds: 60"},
	{"for: 5m", "for: 10s"},
	{"interval: 1m", "interval: 10s"},
}

// testAlertRules writes the shipped alert provisioning into dir with the
// test's windows, failing when a window is no longer where it was.
func testAlertRules(dir string) (string, error) {
	src := filepath.Join(repoRoot, "provisioning", "alerting")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if d.Name() == "hogging.yaml" {
			for _, e := range alertRuleEdits {
				if !bytes.Contains(b, []byte(e[0])) {
					return fmt.Errorf("%s has no %q any more: update the test's alertRuleEdits", path, e[0])
				}
				b = bytes.ReplaceAll(b, []byte(e[0]), []byte(e[1]))
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, d.Name()), b, 0o644)
	})
	return dir, err
}

// need returns the shared stack or skips (fails with CI=true).
func need(t *testing.T) *env {
	t.Helper()
	stack.RequireCluster(t, shared != nil, setupErr)
	return shared
}

func (e *env) docID(id string) string { return cluster + ":" + id }

// submit runs sbatch and returns the job id.
func (e *env) submit(t *testing.T, args ...string) string {
	t.Helper()
	ctx, done := context.WithTimeout(context.Background(), time.Minute)
	defer done()
	id, err := e.st.Slurm.Sbatch(ctx, append([]string{"--output=/dev/null", "--chdir=" + e.dir}, args...)...)
	if err != nil {
		t.Fatalf("sbatch %v: %v", args, err)
	}
	return id
}

// cancelAt cancels the job when t ends.
func (e *env) cancelAt(t *testing.T, id string) {
	t.Cleanup(func() {
		ctx, done := context.WithTimeout(context.Background(), time.Minute)
		defer done()
		_ = e.st.Slurm.Scancel(ctx, id)
	})
}

// finalJob waits until the job's document in the store is final.
func (e *env) finalJob(t *testing.T, id string) {
	t.Helper()
	es := e.st.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	docID := e.docID(id)
	poll(t, jobWait, "final job document of "+id, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := c.GetByIDs(ctx, jobmodel.DefaultJobIndex, []string{docID})
		var doc jobmodel.Job
		return err == nil && got[docID] != nil && json.Unmarshal(got[docID], &doc) == nil && doc.Final
	})
}

func poll(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(time.Second)
	}
}

// client is a Grafana API client logged in as one user.
type client struct {
	base, user, password string
}

func (e *env) admin() client { return client{e.gf.URL, e.gf.Admin, e.gf.AdminPassword} }

// do sends a JSON request and decodes a JSON answer into out (when not
// nil), returning the status code.
func (c client) do(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(c.user, c.password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d, answer does not decode: %v\n%s", method, path, resp.StatusCode, err, trim(b))
		}
	}
	return resp.StatusCode
}

func trim(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// mustDo is do that fails the test unless the status is 200.
func (c client) mustDo(t testing.TB, method, path string, body, out any) {
	t.Helper()
	var raw json.RawMessage
	if code := c.do(t, method, path, body, &raw); code != http.StatusOK {
		t.Fatalf("%s %s as %s: status %d: %s", method, path, c.user, code, trim(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}
