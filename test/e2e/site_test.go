package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/jobsight/jobsight/test/stack"
)

// mailbox is a real SMTP server on loopback that keeps what it receives.
type mailbox struct {
	mu   sync.Mutex
	msgs []mail
}

type mail struct {
	to   []string
	data string
}

type mailSession struct {
	box *mailbox
	to  []string
}

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.box.mu.Lock()
	s.box.msgs = append(s.box.msgs, mail{to: s.to, data: string(b)})
	s.box.mu.Unlock()
	return nil
}
func (s *mailSession) Reset()        { s.to = nil }
func (s *mailSession) Logout() error { return nil }

func startMailbox(t *testing.T) (*mailbox, int) {
	t.Helper()
	box := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{box: box}, nil }))
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return box, ln.Addr().(*net.TCPAddr).Port
}

// for returns the messages sent to addr.
func (b *mailbox) forAddr(addr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msgs {
		for _, to := range m.to {
			if to == addr {
				out = append(out, m.data)
			}
		}
	}
	return out
}

// siteCmd is the built `jobsight` command with a site.yaml for the test
// stack, in a directory every user can read (the tests run it as nobody
// too, as a setgid installation would let them).
type siteCmd struct {
	bin, config string
}

func buildSite(t *testing.T, e *env, smtpPort int) siteCmd {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobsight-site-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "jobsight")
	build := exec.Command("go", "build", "-o", bin, "./cmd/jobsight")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/jobsight: %v\n%s", err, out)
	}
	pw := filepath.Join(dir, "es-password")
	// Readable by nobody's group (nobody runs the command below with this
	// configuration, as a site gives a group of users access), never by
	// every user: the site command refuses a credential file that is.
	if err := os.WriteFile(pw, []byte(e.st.Elasticsearch.Password), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pw, 0, nobodyGID); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	cfg := fmt.Sprintf(`cluster: %s
elasticsearch:
  urls: [%q]
  username: %q
  password_file: %s
prometheus: {url: %q}
state_dir: %s
job_url: "https://grafana.example.org/d/jobsight-job?var-job={doc_id}"
notify:
  enabled: true
  smtp: {host: 127.0.0.1, port: %d, tls: none}
  from: jobsight@example.org
  recipients: {address_template: "{user}@example.org"}
  gpu_jobs_only: false
  batch_window: 0s
  spool_dir: %s
`, e.cluster, e.st.Elasticsearch.URL, e.st.Elasticsearch.User, pw, e.st.Prometheus.URL, state, smtpPort, filepath.Join(state, "mail"))
	if e.st.Elasticsearch.CACertFile != "" {
		cfg = strings.Replace(cfg, "  password_file:", fmt.Sprintf("  ca_file: %s\n  password_file:", e.st.Elasticsearch.CACertFile), 1)
	}
	path := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return siteCmd{bin: bin, config: path}
}

// run runs the command with the test's configuration as uid (0: root)
// and returns its exit code, stdout and stderr.
func (s siteCmd) run(t *testing.T, uid uint32, args ...string) (int, string, string) {
	t.Helper()
	return runAs(t, uid, nil, s.bin, append([]string{args[0], "--config", s.config}, args[1:]...)...)
}

// runAs runs bin as uid (0: root; env nil: this process's environment)
// and returns its exit code, stdout and stderr.
func runAs(t *testing.T, uid uint32, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if uid != 0 {
		gid := uid
		if int(uid) == nobody {
			gid = uint32(nobodyGID)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		cmd.Dir = "/"
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return code, out.String(), errb.String()
}

// nobody is the uid of stack.TestUser, the unprivileged user whose jobs
// the tests submit (Slurm 23.02 on refuses jobs of the real nobody).
var nobody, nobodyGID = func() (int, int) {
	uid, gid, err := stack.TestUserIDs()
	if err != nil {
		return -1, -1
	}
	return uid, gid
}()

// The site command on jobs that really ran: reports only for their owner,
// re-analysis, the mailed digests, history and export.
func TestSiteCommandOnRealJobs(t *testing.T) {
	e := need(t)
	t.Parallel()
	box, port := startMailbox(t)
	site := buildSite(t, e, port)

	mine := e.submit(t, "-J", "site-root", "-c", "1", "--mem=100M", "--gres=gpu:2", "--wrap", "sleep 7")
	theirs := e.submit(t, "--uid="+stack.TestUser, "-J", "site-nobody", "-c", "1", "--mem=100M", "--wrap", "sleep 6")
	job := e.finalJob(t, e.docID(mine), jobWait)
	e.finalJob(t, e.docID(theirs), jobWait)
	if job.Analysis == nil {
		t.Fatal("no analysis in the job document")
	}

	code, out, errOut := site.run(t, 0, "report", e.docID(mine))
	if code != 0 || !strings.Contains(out, mine) || !strings.Contains(out, job.Analysis.Class) || !strings.Contains(out, "#SBATCH --gpus=1") {
		t.Errorf("report as root: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes in a pipe")
	}
	code, out, _ = site.run(t, 0, "report", "--format", "html", mine) // a bare id: the configured cluster
	if code != 0 || !strings.Contains(out, "<svg") || strings.Contains(strings.ToLower(out), "<script") {
		t.Errorf("HTML report: exit %d, %d bytes", code, len(out))
	}

	// Another user's job and a job that does not exist get the same answer.
	code, out, errOut = site.run(t, uint32(nobody), "report", e.docID(mine))
	if code != 1 || out != "" || !strings.Contains(errOut, "no job") {
		t.Errorf("nobody reading root's job: exit %d stdout %q stderr %q", code, out, errOut)
	}
	_, _, errMissing := site.run(t, uint32(nobody), "report", e.cluster+":99999999")
	if strings.ReplaceAll(errOut, e.docID(mine), "X") != strings.ReplaceAll(errMissing, e.cluster+":99999999", "X") {
		t.Errorf("forbidden %q and missing %q answers differ", errOut, errMissing)
	}
	for _, hostile := range []string{`e2e:1" OR "1"="1`, `e2e:*`, "e2e:1\nx", `{"match_all":{}}`} {
		if code, out, _ := site.run(t, uint32(nobody), "report", hostile); code != 1 || out != "" {
			t.Errorf("hostile id %q: exit %d stdout %q", hostile, code, out)
		}
	}
	code, out, errOut = site.run(t, uint32(nobody), "report", e.docID(theirs))
	if code != 0 || !strings.Contains(out, theirs) {
		t.Errorf("nobody reading their own job: exit %d\n%s\n%s", code, out, errOut)
	}

	// Re-analysis with the site's rules (10 min short-job limit): the
	// jobs become short, in the job documents and the results index.
	code, out, errOut = site.run(t, 0, "analyze", "--since", "2h")
	if code != 0 || !strings.Contains(out, "analysed") {
		t.Fatalf("analyze: exit %d\n%s\n%s", code, out, errOut)
	}
	e.poll(t, time.Minute, "re-analysed job document", func(ctx context.Context) bool {
		j := e.finalJob(t, e.docID(mine), time.Minute)
		return j.Analysis != nil && j.Analysis.Class == "short"
	})

	// Mail: each owner gets their job's report, once.
	code, out, errOut = site.run(t, 0, "notify")
	if code != 0 {
		t.Fatalf("notify: exit %d\n%s\n%s", code, out, errOut)
	}
	rootMail, nobodyMail := box.forAddr("root@example.org"), box.forAddr(stack.TestUser+"@example.org")
	if !anyContains(rootMail, "job "+mine) || !anyContains(nobodyMail, "job "+theirs) {
		t.Errorf("mail to root: %d messages, to nobody: %d; root's has job %s: %v, nobody's has job %s: %v",
			len(rootMail), len(nobodyMail), mine, anyContains(rootMail, "job "+mine), theirs, anyContains(nobodyMail, "job "+theirs))
	}
	if anyContains(nobodyMail, "job "+mine) {
		t.Error("nobody was mailed root's job")
	}
	// A second pass mails neither job again. (Root's other jobs, of the
	// tests running beside this one, may become final in between and be
	// mailed: only these two are counted.)
	before := countContaining(box.forAddr("root@example.org"), "job "+mine) + countContaining(box.forAddr(stack.TestUser+"@example.org"), "job "+theirs)
	if code, _, errOut := site.run(t, 0, "notify"); code != 0 ||
		countContaining(box.forAddr("root@example.org"), "job "+mine)+countContaining(box.forAddr(stack.TestUser+"@example.org"), "job "+theirs) != before {
		t.Errorf("second notify pass: exit %d, mailed job %s or %s again (%d messages with them before): %s", code, mine, theirs, before, errOut)
	}

	checkSetgid(t, e, site, mine, theirs)

	code, out, _ = site.run(t, 0, "export", "--since", "2h", "--format", "csv")
	if code != 0 || !strings.HasPrefix(out, "cluster,job_id,") || !strings.Contains(out, ","+mine+",") {
		t.Errorf("export: exit %d\n%.500s", code, out)
	}
	code, out, errOut = site.run(t, 0, "history")
	if code != 0 || !strings.Contains(out, "entries") {
		t.Errorf("history: exit %d\n%s\n%s", code, out, errOut)
	}
}

// checkSetgid installs the command as a site would for its users: setgid
// to a group (adm) that alone can read the configuration and the
// password, built to read only that configuration. Run as nobody, it shows
// nobody's job and nothing else: no other user's job, no other
// configuration, no other command.
func checkSetgid(t *testing.T, e *env, site siteCmd, mine, theirs string) {
	t.Helper()
	const adm = 4 // Debian's adm group
	dir, err := os.MkdirTemp("", "jobsight-setgid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	cfg := filepath.Join(dir, "site.yaml")
	pw := filepath.Join(dir, "es-password")
	b, err := os.ReadFile(site.config)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), filepath.Join(filepath.Dir(site.config), "es-password"), pw, 1))
	// A login node's installation holds only the report's credential (the
	// setgid command refuses the elasticsearch section's): the test
	// store's user moves to the report section.
	s := strings.Replace(string(b), fmt.Sprintf("  username: %q\n  password_file: %s\n", e.st.Elasticsearch.User, pw), "", 1)
	b = []byte(s + fmt.Sprintf("report: {username: %q, password_file: %s}\n", e.st.Elasticsearch.User, pw))
	bin := filepath.Join(dir, "jobsight")
	build := exec.Command("go", "build", "-ldflags", "-X main.installedConfig="+cfg, "-o", bin, "./cmd/jobsight")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{cfg, b, 0o640}, {pw, []byte(e.st.Elasticsearch.Password), 0o640}} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f.path, 0, adm); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(bin, 0, adm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	// The caller's environment tries to redirect connections: the
	// setgid run drops it.
	env := []string{"PATH=/usr/bin:/bin", "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runAs(t, uint32(nobody), env, bin, args...)
	}
	if code, _, errOut := run("check-config"); code != 0 {
		// The directory is on a nosuid mount: setgid does not take effect.
		t.Skipf("setgid has no effect here (%s); skipping the setgid checks", strings.TrimSpace(errOut))
	}
	// The proxy variables were scrubbed: the store is reached directly.
	if code, out, errOut := run("report", e.docID(theirs)); code != 0 || !strings.Contains(out, theirs) {
		t.Errorf("setgid report of nobody's own job: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := run("report", e.docID(mine)); code != 1 || out != "" || !strings.Contains(errOut, "no job") {
		t.Errorf("setgid report of root's job: exit %d stdout %q stderr %q", code, out, errOut)
	}
	evil := filepath.Join(dir, "evil.yaml")
	// A caller's own configuration naming themselves admin, with the real
	// store and the installation's password file.
	evilCfg := strings.Replace(string(b), "state_dir:", "access: {admins: ["+stack.TestUser+"]}\nstate_dir:", 1)
	_ = os.WriteFile(evil, []byte(evilCfg), 0o644)
	for _, args := range [][]string{{"report", "--config", evil, e.docID(mine)}, {"check-config", "--config", pw},
		{"export", "--since", "1h"}, {"analyze", "--since", "1h"}, {"history"}, {"notify"}} {
		code, out, errOut := run(args...)
		if code == 0 || strings.Contains(out+errOut, e.st.Elasticsearch.Password) || strings.Contains(out, mine) {
			t.Errorf("setgid %v as nobody: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
}

// countContaining is how many of msgs contain s as a whole word ("job
// 123" is not in "job 1234").
func countContaining(msgs []string, s string) int {
	re := regexp.MustCompile(`(^|\W)` + regexp.QuoteMeta(s) + `($|\W)`)
	n := 0
	for _, m := range msgs {
		if re.MatchString(m) {
			n++
		}
	}
	return n
}

func anyContains(msgs []string, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
