// Package grafana tests what users and admins meet on the Grafana side —
// the shipped dashboards, the datasource provisioning, the hogging alert
// rules and the plugin's resource routes — the way Grafana runs them,
// without Grafana's server (AGPL, never built or run by this project): the
// built gpx_jobsight executable runs under test/pluginhost, which speaks
// go-plugin's handshake and the SDK's gRPC protocol as Grafana does and
// sends the plugin context Grafana sends (instance settings from the
// shipped provisioning file, users as Viewer, Editor and Admin, the alert
// engine's FromAlert header, forwarded ID-token and cookie headers,
// deadlines). Underneath is a real Slurm cluster (two nodes) whose jobs the
// agents record in a real Elasticsearch-API server and Prometheus, and the
// site's cluster-state collector.
//
// With JOBSIGHT_TEST_GRAFANA_URL naming a Grafana a site or developer
// installed (realgrafana_test.go), the same stores are also provisioned
// into it through its HTTP API and the @grafana/plugin-e2e browser specs
// (plugin-e2e/) run against it; without one those tests say they are
// skipped and why.
//
// It has a stack of its own (cluster "gfe2e"), so the cluster state it
// writes for the alert rules does not meet the agent tests'.
// JOBSIGHT_E2E_KEEP=1 keeps everything running for an hour after the tests.
package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

const (
	cluster  = "gfe2e"
	repoRoot = "../.."
	jobWait  = 90 * time.Second
)

type env struct {
	st   *stack.Stack
	host *pluginhost.Host
	// ds is the Jobsight datasource as provisioning/datasources/jobsight.yaml
	// configures it, with the stack's stores and the collector's
	// allocations in its placeholders.
	ds  pluginhost.Datasource
	dir string
	// provEnv are the placeholders' values (what Grafana's environment
	// would hold).
	provEnv map[string]string
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
			log := e.host.Log()
			if len(log) > 15000 {
				log = log[len(log)-15000:]
			}
			fmt.Fprintf(os.Stderr, "--- the plugin's log (last 15000 bytes)\n%s\n", log)
		}
		if os.Getenv("JOBSIGHT_E2E_KEEP") != "" {
			e.st.Describe(os.Stderr)
			fmt.Fprintln(os.Stderr, "JOBSIGHT_E2E_KEEP set: sleeping 1h before teardown")
			time.Sleep(time.Hour)
		}
		return code
	}())
}

// start brings up the cluster, the agents, a cluster-state collector
// polling every 5 s and the plugin under the host.
func start(ctx context.Context, dir string) (*env, func(), error) {
	agent, plugin, err := agentUnderTest(ctx, dir)
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

	exe, err := pluginExecutable(ctx, dir)
	if err != nil {
		stop()
		return nil, nil, err
	}
	host, err := pluginhost.Start(ctx, exe, pluginhost.Options{})
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, host.Close)
	// Grafana's ID-token keys, for the Viewer's tokens.
	ids, err := pluginhost.NewIDTokens()
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, ids.Close)
	signViewer(ids)
	provEnv := map[string]string{"JOBSIGHT_ALLOCATIONS_URL": allocURL, "JOBSIGHT_ALLOCATIONS_TOKEN": collectorToken}
	for _, kv := range st.GrafanaEnv() {
		k, v, _ := strings.Cut(kv, "=")
		provEnv[k] = v
	}
	ds, err := pluginhost.Provisioned(filepath.Join(repoRoot, "provisioning", "datasources", "jobsight.yaml"), provEnv)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return &env{st: st, host: host, ds: ds, dir: dir, provEnv: provEnv}, stop, nil
}

// agentUnderTest is the agent and SPANK plugin from the installed
// packages where they were installed (stack.EnvPackagesInstalled, as CI
// runs make grafana-test), the plugin built by the package's
// jobsight-spank-install for the cluster's release; else built from the
// working tree, except under CI, where that fails.
func agentUnderTest(ctx context.Context, dir string) (string, string, error) {
	if os.Getenv(stack.EnvPackagesInstalled) != "1" {
		if os.Getenv("CI") != "" {
			return "", "", fmt.Errorf("%s is not 1: under CI the agent runs from its installed package (make grafana-test JOBSIGHT_INSTALL_PACKAGES=1)", stack.EnvPackagesInstalled)
		}
		fmt.Fprintln(os.Stderr, "the agent and SPANK plugin are built from the working tree, not installed from the packages")
		return stack.BuildAgent(ctx, repoRoot, filepath.Join(dir, "bin"))
	}
	in, err := stack.FindSlurm(ctx, "")
	if err != nil {
		return "", "", err
	}
	agent, plugin, version, err := stack.PackagedAgentFor(ctx, filepath.Join(dir, "packaged"), in)
	if err != nil {
		return "", "", err
	}
	packagedVersion = version
	return agent, plugin, nil
}

// packagedVersion is the installed jobsight-agent package's version
// (empty when the agent was built from the working tree).
var packagedVersion string

// pluginExecutable installs the plugin from its archive
// (JOBSIGHT_PLUGIN_ARCHIVE, which `make grafana-test` builds with `make
// plugin-archive`) into a plugins directory as Grafana's installer would,
// and returns the backend Grafana would start from there. Without the
// variable the backend is built from the working tree, except under CI,
// where that fails: what sites install is the archive.
func pluginExecutable(ctx context.Context, dir string) (string, error) {
	archive := os.Getenv("JOBSIGHT_PLUGIN_ARCHIVE")
	if archive == "" {
		if os.Getenv("CI") != "" {
			return "", fmt.Errorf("JOBSIGHT_PLUGIN_ARCHIVE is not set: run make grafana-test, which builds the plugin archive and installs the plugin from it")
		}
		fmt.Fprintln(os.Stderr, "JOBSIGHT_PLUGIN_ARCHIVE not set: the plugin backend is built from the working tree, not installed from its archive")
		return pluginhost.Build(ctx, repoRoot, filepath.Join(dir, "plugin"))
	}
	if !filepath.IsAbs(archive) {
		archive = filepath.Join(repoRoot, archive)
	}
	in, err := pluginhost.Install(archive, filepath.Join(dir, "plugins"))
	if err != nil {
		return "", err
	}
	installed = in
	return in.Executable, nil
}

// installed is the plugin as unpacked from its archive (nil when built
// from the working tree).
var installed *pluginhost.Installed

// collectorToken is the bearer token the test's collector requires.
var collectorToken string

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
	// As deployed where Grafana runs on another host: listening on every
	// address, so a bearer token is required (listen_token_file), which the
	// provisioned datasource sends (JOBSIGHT_ALLOCATIONS_TOKEN).
	collectorToken = fmt.Sprintf("cs-token-%d-%d", os.Getpid(), time.Now().UnixNano())
	tokenFile := filepath.Join(csDir, "token")
	if err := os.WriteFile(tokenFile, []byte(collectorToken+"\n"), 0o600); err != nil {
		return "", nil, err
	}
	config := fmt.Sprintf(`cluster: %s
interval: 5s
listen: 0.0.0.0:%d
listen_token_file: %s
constants_file: %s
slurm: {conf: %s, sinfo: %q, squeue: %q}
prometheus: {remote_write_url: %s/api/v1/write}
spool: {dir: %s}
`, cluster, port, tokenFile, filepath.Join(csDir, "constants.yaml"), st.Slurm.Conf, st.Slurm.Install.Bin("sinfo"), st.Slurm.Install.Bin("squeue"),
		st.Prometheus.URL, filepath.Join(csDir, "spool"))
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
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/constants", nil)
		req.Header.Set("Authorization", "Bearer "+collectorToken)
		resp, err := http.DefaultClient.Do(req)
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

// finalJob waits until the job's document in the store is final and
// returns it.
func (e *env) finalJob(t *testing.T, id string) jobmodel.Job {
	t.Helper()
	es := e.st.Elasticsearch
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	docID := e.docID(id)
	var doc jobmodel.Job
	poll(t, jobWait, "final job document of "+id, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := c.GetByIDs(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []string{docID})
		doc = jobmodel.Job{}
		return err == nil && got[docID] != nil && json.Unmarshal(got[docID], &doc) == nil && doc.Final
	})
	return doc
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
