// Package pilot follows the README's pilot sequence ("From a fresh node to
// a job on a dashboard", steps 2–6) on a fresh machine and times each step:
// the cgroup v2 test node's image (Debian 12 with systemd, Slurm 26.05 and
// munge, nothing of Jobsight; test/cgroupv2) booted under QEMU, with the
// stores standing in for the site's inside it (site.sh). The guest's
// script (guest/pilot.sh) installs the node and collector packages and
// configures them with the README's commands; this test stands in for
// Grafana (step 4: the plugin installed from its archive under the plugin
// host, the datasource provisioned from provisioning/datasources), waits
// for the job of step 5 on the My jobs panel, as its user, running and then
// ended, and asks who that user is seen as (step 6).
//
// It runs only with JOBSIGHT_PILOT=1 (make pilot-test, which builds the
// packages and the plugin archive): ten minutes of emulation.
package pilot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/test/cgroupv2"
	"github.com/jobsight/jobsight/test/pluginhost"
	"github.com/jobsight/jobsight/test/stack"
)

// The environment: EnvPilot gates the test; the packages' directory and
// the plugin archive are the release artefacts it installs.
const (
	EnvPilot       = "JOBSIGHT_PILOT"
	EnvPackagesDir = "JOBSIGHT_PACKAGES_DIR"
	EnvArchive     = "JOBSIGHT_PLUGIN_ARCHIVE"
)

// user is the guest's ordinary user (site.sh), who submits the job and
// looks at it.
const user = "alice"

func TestPilotFromTheReadme(t *testing.T) {
	if os.Getenv(EnvPilot) != "1" {
		t.Skipf("%s=1 runs it (make pilot-test)", EnvPilot)
	}
	stack.Require(t, "root", "qemu-system-x86_64", "mke2fs", "mmdebstrap", "prometheus")
	pkgs, archive := os.Getenv(EnvPackagesDir), os.Getenv(EnvArchive)
	if pkgs == "" || archive == "" {
		t.Fatalf("%s and %s must name the release artefacts (make pilot-test sets them)", EnvPackagesDir, EnvArchive)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	share, err := os.MkdirTemp("", "jobsight-pilot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the guest's share (logs, console): %s", share)
			return
		}
		_ = os.RemoveAll(share)
	})
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	if err := os.WriteFile(filepath.Join(share, "collector-token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	node, err := cgroupv2.Boot(ctx, share, cgroupv2.Options{Packages: pkgs, Script: "test/pilot/guest/pilot.sh",
		Forwards: []int{9310}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()

	// Steps 2 and 3 are the guest's.
	if err := node.WaitFile(ctx, "out/node-ready"); err != nil {
		t.Fatal(err)
	}

	// 4. Grafana: the plugin from its archive, the datasource provisioned
	// with the stores' and the collector's addresses (Grafana's host
	// reaches them through the forwards).
	t4 := time.Now()
	installed, err := pluginhost.Install(archive, filepath.Join(share, "grafana-plugins"))
	if err != nil {
		t.Fatal(err)
	}
	host, err := pluginhost.Start(ctx, installed.Executable, pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	root, err := stack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := pluginhost.Provisioned(filepath.Join(root, "provisioning", "datasources", "jobsight.yaml"), map[string]string{
		"JOBSIGHT_ES_URL": node.ESURL, "JOBSIGHT_ES_USER": node.ESUser, "JOBSIGHT_ES_PASSWORD": node.ESPassword,
		"JOBSIGHT_PROMETHEUS_URL":  node.PromURL,
		"JOBSIGHT_ALLOCATIONS_URL": fmt.Sprintf("http://127.0.0.1:%d/constants", node.Ports[9310]), "JOBSIGHT_ALLOCATIONS_TOKEN": token,
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := pluginhost.Caller{User: &backend.User{Login: "admin", Role: "Admin"}}
	health, err := host.CheckHealth(ctx, ds, admin)
	if err != nil || health.Status != backend.HealthStatusOk {
		t.Fatalf("the provisioned datasource's health check: %v %+v", err, health)
	}
	t.Logf("Grafana's health check: %s", health.Message)
	ids, err := pluginhost.NewIDTokens()
	if err != nil {
		t.Fatal(err)
	}
	defer ids.Close()
	cfg := pluginhost.DefaultConfig()
	cfg["GF_APP_URL"] = ids.URL()
	viewer := pluginhost.Caller{User: &backend.User{Login: user, Name: user, Email: user + "@example.org", Role: "Viewer"}, Config: cfg,
		IDTokenFunc: func() string {
			return ids.Token(pluginhost.Identity{UID: user + "-uid", Login: user, Email: user + "@example.org", AuthenticatedBy: "ldap"})
		}}
	step4 := time.Since(t4)
	if err := os.WriteFile(filepath.Join(share, "grafana-ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// 5. The job on the My jobs panel, as its user: running (live
	// figures), then ended with its final state and class.
	if err := node.WaitFile(ctx, "out/job"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(share, "out", "job"))
	job := strings.TrimSpace(string(b))
	myJobs := func() map[string]string {
		now := time.Now()
		resp, err := host.QueryData(ctx, ds, viewer, pluginhost.Query{Model: map[string]any{"queryType": "jobs"},
			From: now.Add(-time.Hour), To: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Responses["A"]
		if r.Error != nil {
			t.Fatalf("My jobs as %s: %v", user, r.Error)
		}
		return row(r.Frames, job)
	}
	var seenRunning, seenEnded time.Time
	var final map[string]string
	for deadline := time.Now().Add(15 * time.Minute); ; time.Sleep(2 * time.Second) {
		r := myJobs()
		if r != nil && r["live"] == "true" && seenRunning.IsZero() {
			seenRunning = time.Now()
			t.Logf("job %s on My jobs, running: %v", job, r)
		}
		if r != nil && r["end"] != "" && r["class"] != "" {
			seenEnded, final = time.Now(), r
			break
		}
		node.Follow()
		if node.Failed() != "" {
			t.Fatalf("the guest's script failed: %s", node.Failed())
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never showed ended with its class on My jobs (last row %v)", job, r)
		}
	}
	t.Logf("job %s on My jobs, ended: state %s, class %s, efficiency %s", job, final["state"], final["class"], final["score"])
	if seenRunning.IsZero() {
		t.Errorf("job %s was never seen running on My jobs", job)
	}
	if final["state"] == "" || final["state"] == "UNKNOWN" || final["user"] != user {
		t.Errorf("job %s ended as %q of user %q: the agent lacked Slurm's account of it", job, final["state"], final["user"])
	}

	// 6. Who the user is seen as.
	t6 := time.Now()
	res, err := host.CallResource(ctx, ds, viewer, "GET", "identity", nil)
	if err != nil {
		t.Fatal(err)
	}
	var who struct {
		Allowed   bool   `json:"allowed"`
		SlurmUser string `json:"slurmUser"`
		Scope     string `json:"scope"`
		Summary   string `json:"summary"`
	}
	if res.Status != 200 || json.Unmarshal(res.Body, &who) != nil || !who.Allowed || who.SlurmUser != user || who.Scope != "own" {
		t.Fatalf("identity as %s: HTTP %d %s", user, res.Status, res.Body)
	}
	step6 := time.Since(t6)
	t.Logf("identity: %s", who.Summary)
	if err := os.WriteFile(filepath.Join(share, "host-done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// The times, from the guest's marks and the host's own.
	marks, err := readMarks(filepath.Join(share, "out", "marks"))
	if err != nil {
		t.Fatal(err)
	}
	d := func(from, to string) time.Duration { return marks[to].Sub(marks[from]).Round(time.Second) }
	total := seenEnded.Sub(marks["start"]) + step6
	report := fmt.Sprintf(`The README's pilot on a fresh Debian 12 node (QEMU, software emulation), %s:
  2. node: package, configuration, setup, check-stores, SPANK plugin built, slurmd restarted  %s
  3. collector: package, configuration, checks, enabled                                     %s
  4. Grafana: plugin from its archive, datasource provisioned, health check                  %s
     (the guest waited for it: %s)
  5. a job (120 s of CPU): submitted, on My jobs running after %s, ended with its class after %s
  6. identity as %s: %q                                                                       %s
  total, from the first package to the identity check                                         %s
`, time.Now().UTC().Format("2006-01-02"), d("start", "node"), d("node", "collector"), step4.Round(time.Second),
		d("collector", "grafana"), seenRunning.Sub(marks["submitted"]).Round(time.Second), seenEnded.Sub(marks["submitted"]).Round(time.Second),
		user, who.Summary, step6.Round(time.Millisecond), total.Round(time.Second))
	t.Log("\n" + report)
	if out := os.Getenv("JOBSIGHT_PILOT_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if total > time.Hour {
		t.Errorf("the pilot took %s, more than the hour the README promises", total)
	}
}

// row is the job's row of the Jobs frame as text, nil when it is not there.
func row(fs data.Frames, job string) map[string]string {
	for _, f := range fs {
		id, _ := f.FieldByName("job_id")
		if id == nil {
			continue
		}
		for i := 0; i < id.Len(); i++ {
			if v, ok := id.ConcreteAt(i); !ok || v != job {
				continue
			}
			out := map[string]string{}
			for _, fld := range f.Fields {
				if v, ok := fld.ConcreteAt(i); ok {
					out[fld.Name] = fmt.Sprint(v)
				}
			}
			return out
		}
	}
	return nil
}

// readMarks reads the guest's "<step> <epoch seconds>" lines.
func readMarks(path string) (map[string]time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, v, ok := strings.Cut(line, " ")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		out[name] = time.Unix(0, int64(f*1e9))
	}
	for _, k := range []string{"start", "node", "collector", "grafana", "submitted"} {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("%s: no %s mark", path, k)
		}
	}
	return out, nil
}
