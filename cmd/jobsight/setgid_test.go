package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/test/stack"
)

// setgidInstall is the command built and installed as a site installs it
// for its users: setgid to a group (adm) that alone may read the
// configuration and the secrets in dir, built to read only dir/site.yaml.
type setgidInstall struct {
	dir, bin, config string
	gid              int
	nobody           uint32
	nogroup          uint32
}

func installSetgid(t *testing.T) *setgidInstall {
	t.Helper()
	stack.Require(t, "root")
	grp, err := user.LookupGroup("adm")
	if err != nil {
		stack.Unavailable(t, "no group adm to install the command setgid to: %v", err)
	}
	nb, err := user.Lookup("nobody")
	if err != nil {
		stack.Unavailable(t, "no user nobody to run the command as: %v", err)
	}
	in := &setgidInstall{}
	in.gid, _ = strconv.Atoi(grp.Gid)
	uid, _ := strconv.ParseUint(nb.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nb.Gid, 10, 32)
	in.nobody, in.nogroup = uint32(uid), uint32(gid)
	// Not t.TempDir: nobody must be able to reach the installed command.
	in.dir, err = os.MkdirTemp("", "jobsight-setgid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(in.dir) })
	if err := os.Chmod(in.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in.config = filepath.Join(in.dir, "site.yaml")
	in.bin = filepath.Join(in.dir, "jobsight")
	build := exec.Command("go", "build", "-ldflags", "-X main.installedConfig="+in.config, "-o", in.bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	if err := os.Chown(in.bin, 0, in.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(in.bin, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	return in
}

// secret writes a group-readable file of the installation (0640 root:adm).
func (in *setgidInstall) secret(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(in.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 0, in.gid); err != nil {
		t.Fatal(err)
	}
	return p
}

// start starts the installed command as nobody (no supplementary groups)
// with env.
func (in *setgidInstall) start(ctx context.Context, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, in.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: in.nobody, Gid: in.nogroup, Groups: []uint32{}}}
	cmd.Dir = "/"
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("running the installed command: %v", err)
	return -1
}

func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// storeRequest is what the fake stores saw of one request.
type storeRequest struct {
	path, auth string
	proto      int
}

// fakeStores answers over https with HTTP/2 as Elasticsearch (info, the
// job's search) and Prometheus (range queries) would, for one job of
// nobody's. A fake, not ZincSearch and Prometheus: the leak needs an https
// server speaking HTTP/2, which neither serves here.
type fakeStores struct {
	*httptest.Server
	job      []byte
	started  chan struct{} // closed once pid is set
	pid      int
	mu       sync.Mutex
	requests []storeRequest
	environ  []string // the command's environment, read at its first request
}

func newFakeStores(t *testing.T, job jobmodel.Job) *fakeStores {
	t.Helper()
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStores{job: raw, started: make(chan struct{})}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.EnableHTTP2 = true
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func (f *fakeStores) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, storeRequest{path: r.URL.Path, auth: r.Header.Get("Authorization"), proto: r.ProtoMajor})
	first := len(f.requests) == 1
	f.mu.Unlock()
	if first {
		select {
		case <-f.started:
			// /proc/<pid>/environ is the environment the process was
			// last exec'd with (a re-exec shows the new one).
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", f.pid))
			f.mu.Lock()
			f.environ = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			f.mu.Unlock()
		case <-time.After(10 * time.Second):
		}
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/":
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		_, _ = w.Write([]byte(`{"name":"fake","cluster_name":"fake","version":{"number":"8.19.0","build_flavor":"default"},"tagline":"You Know, for Search"}`))
	case strings.HasSuffix(r.URL.Path, "/_search"):
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		fmt.Fprintf(w, `{"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_index":"jobsight-jobs","_id":"fake:42","_source":%s}]}}`, f.job)
	case r.URL.Path == "/api/v1/query_range":
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeStores) seen() ([]storeRequest, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]storeRequest(nil), f.requests...), append([]string(nil), f.environ...)
}

// The installed setgid `jobsight report`, run by a user with
// GODEBUG=http2debug=2 (Go's HTTP/2 client then logs every request
// header) against https stores speaking HTTP/2: no credential reaches its
// output, it runs with the allow-listed environment only, and it reads
// with the report's own credential, never the elasticsearch section's
// (whose password file does not even exist). With only the writing
// credential configured, it refuses to start and sends nothing.
func TestSetgidReportLeaksNoCredentialAndKeepsOnlyAllowListedEnvironment(t *testing.T) {
	in := installSetgid(t)
	start := time.Now().Add(-2 * time.Hour).UTC()
	uid := in.nobody
	job := jobmodel.Job{DocID: "fake:42", SchemaVersion: jobmodel.SchemaVersion, Cluster: "fake", JobID: "42", User: "nobody", UID: &uid,
		State: jobmodel.StateCompleted, StartTime: jobmodel.At(start), EndTime: jobmodel.At(start.Add(time.Hour)), Final: true,
		UpdatedAt: jobmodel.At(start.Add(time.Hour))}
	srv := newFakeStores(t, job)
	ca := filepath.Join(in.dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	reportPW, token, writePW := randomSecret(t, "report-pw-"), randomSecret(t, "prom-token-"), randomSecret(t, "write-pw-")
	reportPWFile := in.secret(t, "es-report-password", reportPW)
	tokenFile := in.secret(t, "prom-token", token)
	writePWFile := filepath.Join(in.dir, "es-write-password") // absent: the report never reads it
	writeConfig := func(report bool) {
		cfg := fmt.Sprintf(`cluster: fake
elasticsearch:
  urls: [%q]
  username: jobsight-writer
  password_file: %q
  ca_file: %q
prometheus:
  url: %q
  bearer_token_file: %q
  ca_file: %q
state_dir: %q
`, srv.URL, writePWFile, ca, srv.URL, tokenFile, ca, filepath.Join(in.dir, "state"))
		if report {
			cfg += fmt.Sprintf("report:\n  username: jobsight-report\n  password_file: %q\n", reportPWFile)
		}
		in.secret(t, "site.yaml", cfg)
	}
	writeConfig(true)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-jobsight-test", "GODEBUG=http2debug=2",
		"JOBSIGHT_OFF_THE_LIST=caller-value", "HTTPS_PROXY=http://127.0.0.1:9", "SSL_CERT_FILE=/nonexistent"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	check, _, checkErr := in.start(ctx, env, "check-config")
	if code := exitCode(t, check.Run()); code != 0 {
		if strings.Contains(checkErr.String(), "permission denied") {
			stack.Unavailable(t, "setgid has no effect in %s (a nosuid mount?): %s", in.dir, strings.TrimSpace(checkErr.String()))
		}
		t.Fatalf("check-config through the setgid installation: exit %d: %s", code, checkErr)
	}

	cmd, stdout, stderr := in.start(ctx, env, "report", "fake:42")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv.pid = cmd.Process.Pid
	close(srv.started)
	code := exitCode(t, cmd.Wait())
	out := stdout.String() + stderr.String()
	if code != 0 || !strings.Contains(stdout.String(), "42") {
		t.Fatalf("setgid report of nobody's own job: exit %d\nstdout:\n%s\nstderr:\n%.3000s", code, stdout, stderr)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("jobsight-report:" + reportPW))
	for _, s := range []string{reportPW, token, basic, "Bearer", "authorization"} {
		if strings.Contains(strings.ToLower(out), strings.ToLower(s)) {
			t.Errorf("the setgid report's output holds %q:\n%.3000s", s, out)
		}
	}
	reqs, environ := srv.seen()
	http2, es, prom := false, 0, 0
	for _, r := range reqs {
		http2 = http2 || r.proto == 2
		switch {
		case r.path == "/api/v1/query_range":
			prom++
			if r.auth != "Bearer "+token {
				t.Errorf("Prometheus request without the bearer token")
			}
		default:
			es++
			if r.auth != "Basic "+basic {
				t.Errorf("Elasticsearch request %s not with the report's credential (user %q)", r.path, basicUser(r.auth))
			}
		}
	}
	if !http2 || es == 0 || prom == 0 {
		t.Errorf("the report did not reach both stores over HTTP/2 (%d Elasticsearch, %d Prometheus requests, HTTP/2 %v): the test proves nothing", es, prom, http2)
	}
	if len(environ) == 0 {
		t.Fatal("the command's environment was not read")
	}
	want := []string{"PATH=/usr/bin:/bin", "TERM=xterm-jobsight-test", "GOTRACEBACK=none"}
	if strings.Join(environ, "\n") != strings.Join(want, "\n") {
		t.Errorf("environment of the setgid run:\n%s\nwant only:\n%s", strings.Join(environ, "\n"), strings.Join(want, "\n"))
	}

	// Only the writing credential configured: refused before any request,
	// its password file (present now) unread.
	writeConfig(false)
	in.secret(t, "es-write-password", writePW)
	before := len(reqs)
	cmd, stdout, stderr = in.start(ctx, env, "report", "fake:42")
	code = exitCode(t, cmd.Run())
	out = stdout.String() + stderr.String()
	if code != 2 || !strings.Contains(out, "report.username") || strings.Contains(out, writePW) {
		t.Errorf("setgid report with only the writing credential: exit %d, want 2 naming report.username:\n%s", code, out)
	}
	if reqs, _ := srv.seen(); len(reqs) != before {
		t.Errorf("setgid report with only the writing credential sent %d requests", len(reqs)-before)
	}
}

// basicUser is the user of a basic-auth header, for messages that must not
// show the password.
func basicUser(h string) string {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if err != nil {
		return ""
	}
	u, _, _ := strings.Cut(string(b), ":")
	return u
}
