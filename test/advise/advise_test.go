// Package advise tests the advice at submit time on a real Slurm cluster:
// slurmctld and slurmd of the release under test (26.05 built with Lua, or
// Debian's 22.05), the cli_filter/lua plugin loading the shipped
// examples/slurm/cli_filter.lua, the site command installed setgid as a
// site installs it, and ZincSearch holding the users' job histories. The
// unprivileged test user submits with sbatch, at a terminal (a pty made
// by script(1)) and not.
package advise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// otherUID is another user, whose history the test user must never see.
const otherUID = 4242

type env struct {
	st       *stack.Stack
	dir      string // the installation: the setgid command, its configuration, the filter
	bin      string
	config   string
	siteYAML string // the configuration as written first
	home     string // the test user's home
	uid, gid int
	script   string // the over-asker's batch script, named "train"
}

func setup(t *testing.T) *env {
	t.Helper()
	stack.Require(t, "root", "slurm", "script")
	admGrp, err := user.LookupGroup("adm")
	if err != nil {
		stack.Unavailable(t, "no group adm to install the command setgid to: %v", err)
	}
	adm, _ := strconv.Atoi(admGrp.Gid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := &env{}
	if e.uid, e.gid, err = stack.TestUserIDs(); err != nil {
		t.Fatal(err)
	}
	// Short, and reachable by the test user: not t.TempDir (slurmd's
	// socket paths, and a 0700 parent).
	base, err := os.MkdirTemp("", "jsadv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	e.st, err = stack.Up(ctx, filepath.Join(base, "st"), stack.Options{Slurm: stack.SlurmOptions{
		ClusterName: "adv", ExtraConf: "CliFilterPlugins=cli_filter/lua\n"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.st.Down() })

	// The site command as a site installs it for its users: setgid to a
	// group (adm) that alone reads the configuration and the store's
	// password; built to read only this configuration.
	e.dir = filepath.Join(base, "inst")
	e.home = filepath.Join(base, "home")
	for _, d := range []string{e.dir, e.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(e.home, e.uid, e.gid); err != nil {
		t.Fatal(err)
	}
	e.config = filepath.Join(e.dir, "site.yaml")
	e.bin = filepath.Join(e.dir, "jobsight")
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.installedConfig="+e.config, "-o", e.bin, "./cmd/jobsight")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the site command: %v\n%s", err, out)
	}
	must(t, os.Chown(e.bin, 0, adm))
	must(t, os.Chmod(e.bin, 0o755|os.ModeSetgid))
	pw := filepath.Join(e.dir, "es-password")
	must(t, os.WriteFile(pw, []byte(e.st.Elasticsearch.Password), 0o640))
	must(t, os.Chown(pw, 0, adm))
	ca := ""
	if e.st.Elasticsearch.CACertFile != "" {
		ca = "\n  ca_file: " + e.st.Elasticsearch.CACertFile
	}
	e.siteYAML = fmt.Sprintf("cluster: adv\nelasticsearch:\n  urls: [%q]%s\nreport: {username: %q, password_file: %s}\n",
		e.st.Elasticsearch.URL, ca, e.st.Elasticsearch.User, pw)
	e.writeConfig(t, e.siteYAML, adm)

	// The shipped filter, loaded by the cluster's cli_filter.lua as a
	// site with a filter of its own loads it: its settings are the
	// shipped defaults (the 1 s limit among them) but for the command's
	// path and the site switch's file.
	shipped, err := os.ReadFile("../../examples/slurm/cli_filter.lua")
	must(t, err)
	lua := filepath.Join(e.dir, "jobsight-cli-filter.lua")
	must(t, os.WriteFile(lua, shipped, 0o644))
	conf := fmt.Sprintf(`jobsight_advice_settings = { command = %q, site_off_file = %q }
dofile(%q)
`, e.bin, filepath.Join(e.dir, "advise.off"), lua)
	must(t, os.WriteFile(filepath.Join(filepath.Dir(e.st.Slurm.Conf), "cli_filter.lua"), []byte(conf), 0o644))

	e.script = filepath.Join(e.dir, "train")
	must(t, os.WriteFile(e.script, []byte("#!/bin/sh\nsleep 2\n"), 0o755))
	e.seed(t, ctx)
	v, err := e.st.Slurm.Command(ctx, "sbatch", "--version").CombinedOutput()
	t.Logf("cluster: %s (%v; release under test %s)", strings.TrimSpace(string(v)), err, stack.SlurmRelease())
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeConfig replaces the installation's configuration (0640 root:adm:
// the test user cannot read it).
func (e *env) writeConfig(t *testing.T, content string, adm int) {
	t.Helper()
	must(t, os.WriteFile(e.config, []byte(content), 0o640))
	if adm >= 0 {
		must(t, os.Chown(e.config, 0, adm))
	}
}

// seed stores the histories, as agents write final job documents: the test
// user's 12 "train" jobs that asked for 2 CPUs, 2G and 4 hours and used
// under a core, ~200 MiB and half an hour; another user's 12 "secret" jobs
// of account lab asking for 64G that used 1 GiB.
func (e *env) seed(t *testing.T, ctx context.Context) {
	t.Helper()
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{e.st.Elasticsearch.URL}, Username: e.st.Elasticsearch.User,
		Password: e.st.Elasticsearch.Password, CACertFile: e.st.Elasticsearch.CACertFile})
	must(t, err)
	now := time.Now()
	var docs []store.Doc
	add := func(i int, uid uint32, userName, account, name string, memReq int64, peak int64, p95 float64) {
		end := now.Add(-time.Duration(i+1) * 3 * time.Hour)
		ran := 30*time.Minute + time.Duration(i)*time.Minute
		el := ran.Seconds()
		job := jobmodel.Job{DocID: fmt.Sprintf("adv:%d", 5000+len(docs)), Cluster: "adv", JobID: strconv.Itoa(5000 + len(docs)),
			Name: name, User: userName, UID: &uid, Account: account, Partition: "debug", State: jobmodel.StateCompleted, Final: true, NodeCount: 1,
			Nodes: []string{e.st.Slurm.NodeName}, StartTime: jobmodel.At(end.Add(-ran)), EndTime: jobmodel.At(end),
			ElapsedSeconds: &el, TimeLimitSeconds: jobmodel.Ptr(int64(4 * 3600)), UpdatedAt: jobmodel.At(end),
			Requested: jobmodel.Request{CPUs: jobmodel.Ptr(int64(2)), Tasks: jobmodel.Ptr(int64(1)), Nodes: jobmodel.Ptr(int64(1)),
				MemoryBytes: &memReq, MemoryPerNodeBytes: &memReq},
			Usage: jobmodel.Usage{CPU: &jobmodel.CPUUsage{P95Cores: &p95, CoreSeconds: jobmodel.Ptr(p95 * el)},
				Memory: &jobmodel.MemoryUsage{PeakBytes: &peak, MaxNodePeakBytes: &peak}}}
		body, err := json.Marshal(job)
		must(t, err)
		docs = append(docs, store.Doc{Kind: store.KindJobDoc, Index: job.IndexOf(jobmodel.DefaultJobIndex, now), ID: job.DocID, Body: body})
	}
	for i := range 12 {
		add(i, uint32(e.uid), stack.TestUser, "", "train", 2<<30, 200<<20+int64(i)<<20, 0.8)
		add(i, otherUID, "other", "lab", "secret", 64<<30, 1<<30, 0.9)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		must(t, c.EnsureIndex(ctx, d.Index, jobmodel.JobMapping()))
	}
	if fails, err := c.Bulk(ctx, docs); err != nil || len(fails) > 0 {
		t.Fatalf("storing the histories: %v %v", err, fails)
	}
	for {
		raw, err := c.Search(ctx, jobmodel.SearchIndices(jobmodel.DefaultJobIndex), []byte(`{"size":0,"track_total_hits":true,"query":{"match_all":{}}}`))
		if err == nil && strings.Contains(string(raw), `"value":24`) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the store does not answer the 24 jobs: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// submission is one sbatch run by the test user.
type submission struct {
	out   string // stdout and stderr (one stream at a terminal)
	jobID string
	took  time.Duration
}

var submitted = regexp.MustCompile(`Submitted batch job (\d+)`)

// sbatch runs sbatch args as the test user with env added, at a terminal
// (under script(1), which gives it a pty) when tty.
func (e *env) sbatch(t *testing.T, tty bool, extraEnv []string, args ...string) submission {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb := e.st.Slurm.Command(ctx, "sbatch").Path
	argv := append([]string{sb, "-o", "/dev/null", "-D", e.home}, args...)
	var cmd *exec.Cmd
	if tty {
		quoted := make([]string, len(argv))
		for i, a := range argv {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		cmd = exec.CommandContext(ctx, "script", "-qec", strings.Join(quoted, " "), "/dev/null")
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.uid), Gid: uint32(e.gid), Groups: []uint32{}}}
	cmd.Dir = e.home
	cmd.Env = append(append([]string{"HOME=" + e.home, "PATH=/usr/bin:/bin", "USER=" + stack.TestUser, "TERM=xterm"}, e.st.Slurm.Env()...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	s := submission{out: strings.ReplaceAll(out.String(), "\r\n", "\n"), took: time.Since(start)}
	if err != nil {
		t.Fatalf("sbatch %v (tty %v): %v\n%s", args, tty, err, s.out)
	}
	m := submitted.FindStringSubmatch(s.out)
	if m == nil {
		t.Fatalf("sbatch %v submitted nothing:\n%s", args, s.out)
	}
	s.jobID = m[1]
	return s
}

// overAsk is the over-asker's usual request.
func (e *env) overAsk() []string {
	return []string{"-p", "debug", "-c", "2", "--mem=2G", "--time=04:00:00", e.script}
}

// unchanged checks that Slurm holds the job with the request as typed.
func (e *env) unchanged(t *testing.T, jobID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.st.Slurm.Scontrol(ctx, "show", "job", jobID)
	if err != nil {
		t.Fatalf("scontrol show job %s: %v", jobID, err)
	}
	for _, want := range []string{"JobName=train", "MinMemoryNode=2G", "TimeLimit=04:00:00", "NumCPUs=2", "UserId=" + stack.TestUser} {
		if !strings.Contains(out, want) {
			t.Errorf("job %s: Slurm's record lacks %s: the request was changed or the job is not the user's\n%s", jobID, want, out)
		}
	}
}

const adviceLine = `jobsight: your last 12 jobs named "train" used memory at most`

func TestAdviceInSbatch(t *testing.T) {
	e := setup(t)

	t.Run("over-asker at a terminal sees the advice", func(t *testing.T) {
		s := e.sbatch(t, true, nil, e.overAsk()...)
		t.Logf("sbatch with advice took %s:\n%s", s.took.Round(time.Millisecond), s.out)
		for _, want := range []string{adviceLine, "#SBATCH --mem=1G", "#SBATCH --cpus-per-task=1", "#SBATCH --time="} {
			if !strings.Contains(s.out, want) {
				t.Errorf("sbatch's output lacks %q:\n%s", want, s.out)
			}
		}
		e.unchanged(t, s.jobID)
	})

	// Submissions that must get no advice, and be submitted as typed: by
	// a tool (no terminal), by users who opted out, with the site's switch.
	for _, c := range []struct {
		name string
		tty  bool
		env  []string
		file string // created for the submission
	}{
		{"no terminal: a tool submitting gets nothing", false, nil, ""},
		{"user opted out by environment", true, []string{"JOBSIGHT_NO_ADVICE=1"}, ""},
		{"user opted out by file", true, nil, filepath.Join(e.home, ".jobsight-no-advice")},
		{"site switch", true, nil, filepath.Join(e.dir, "advise.off")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.file != "" {
				must(t, os.WriteFile(c.file, nil, 0o644))
				defer os.Remove(c.file)
			}
			s := e.sbatch(t, c.tty, c.env, e.overAsk()...)
			if strings.Contains(s.out, "jobsight") {
				t.Errorf("advice although it must be quiet:\n%s", s.out)
			}
			e.unchanged(t, s.jobID)
		})
	}

	t.Run("another user's history is never shown", func(t *testing.T) {
		// The other user's "secret" jobs asked for 64G and used 1 GiB:
		// the test user submitting a job of that name and request gets
		// nothing, and asking the command directly gets no jobs.
		s := e.sbatch(t, true, nil, "-p", "debug", "-J", "secret", "-c", "2", "--mem=8G", e.script)
		if strings.Contains(s.out, "jobsight") {
			t.Errorf("advice from another user's history:\n%s", s.out)
		}
		out, code := e.advise(t, nil, "--json", "--job-name", "secret", "--mem", "64G", "--cpus-per-task", "2", "-p", "debug")
		var a struct {
			Jobs    int
			Changes []any
		}
		if code != 0 || json.Unmarshal([]byte(out), &a) != nil || a.Jobs != 0 || len(a.Changes) != 0 {
			t.Errorf("advise --json for the other user's job name: exit %d, %s", code, out)
		}
		// No way to point it at another configuration or user.
		evil := filepath.Join(e.home, "evil.yaml")
		must(t, os.WriteFile(evil, []byte("elasticsearch: {urls: [\"http://127.0.0.1:1\"]}\n"), 0o644))
		if out, code := e.advise(t, nil, "--config", evil, "--json"); code == 0 || !strings.Contains(out, "reads only") {
			t.Errorf("advise --config of the user's own: exit %d, %s", code, out)
		}
		// The environment is the setgid allow-list's, whatever the
		// caller sets: no debug output, no password.
		if out, code := e.advise(t, []string{"GODEBUG=http2debug=2", "SSL_CERT_FILE=/dev/null"}, "--json"); code != 0 ||
			strings.Contains(out, "http2") || strings.Contains(out, e.st.Elasticsearch.Password) {
			t.Errorf("advise with GODEBUG and SSL_CERT_FILE set: exit %d, %s", code, out)
		}
		if _, err := os.ReadFile(e.config); err != nil {
			t.Fatal(err)
		}
		if out, _ := e.runAs(t, nil, "/bin/cat", e.config); !strings.Contains(out, "Permission denied") {
			t.Errorf("the test user can read the configuration: %s", out)
		}
	})

	t.Run("a PI is advised from the account's jobs only where the site allows it", func(t *testing.T) {
		args := []string{"--json", "-A", "lab", "-J", "secret", "--mem", "64G", "-c", "2", "-p", "debug"}
		jobsOf := func(out string) (int, string) {
			var a struct {
				Jobs    int
				Account string
				SBATCH  []string
			}
			if err := json.Unmarshal([]byte(out), &a); err != nil {
				t.Fatalf("advise --json: %v\n%s", err, out)
			}
			return a.Jobs, a.Account + " " + strings.Join(a.SBATCH, " ")
		}
		// Named PI of lab, but the site has not turned PI history on.
		pis := fmt.Sprintf("access:\n  pis: {lab: [%q]}\n", stack.TestUser)
		e.writeConfig(t, e.siteYAML+pis, -1)
		defer e.writeConfig(t, e.siteYAML, -1)
		if out, code := e.advise(t, nil, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		} else if n, what := jobsOf(out); n != 0 {
			t.Errorf("PI history off: based on %d jobs (%s), want none of the account's", n, what)
		}
		// Turned on: the account's 12 jobs of the other user.
		e.writeConfig(t, e.siteYAML+pis+"advise: {pi_history: true}\n", -1)
		out, code := e.advise(t, nil, args...)
		if n, what := jobsOf(out); code != 0 || n != 12 || !strings.HasPrefix(what, "lab ") || !strings.Contains(what, "--mem=") {
			t.Errorf("PI of lab: exit %d, %d jobs, %q; want the account's 12 and a smaller --mem", code, n, what)
		}
		text, _ := e.advise(t, nil, args[1:]...)
		if !strings.Contains(text, `the last 12 jobs named "secret" in account "lab"`) {
			t.Errorf("PI advice text:\n%s", text)
		}
		// Another account, or a PI list that names someone else: own jobs only.
		e.writeConfig(t, e.siteYAML+"access:\n  pis: {lab: [other]}\nadvise: {pi_history: true}\n", -1)
		if out, code := e.advise(t, nil, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		} else if n, what := jobsOf(out); n != 0 {
			t.Errorf("not PI of lab: based on %d jobs (%s)", n, what)
		}
	})

	t.Run("a hostile job name runs nothing", func(t *testing.T) {
		// Passed through Lua to a shell: each quote, substitution and
		// separator must stay part of the name.
		mark := filepath.Join(e.home, "pwned")
		name := "x'; touch " + mark + "1; '$(touch " + mark + "2)`touch " + mark + "3`\"; touch " + mark + "4 #"
		s := e.sbatch(t, true, nil, "-p", "debug", "-J", name, "-c", "2", "--mem=2G", e.script)
		for i := 1; i <= 4; i++ {
			if _, err := os.Stat(mark + strconv.Itoa(i)); err == nil {
				t.Errorf("the job name ran a command: %s%d exists", mark, i)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := e.st.Slurm.Squeue(ctx, "-h", "-j", s.jobID, "-o", "%j"); err != nil || strings.TrimSpace(out) != name {
			t.Errorf("job %s is named %q (%v), want %q", s.jobID, strings.TrimSpace(out), err, name)
		}
	})

	t.Run("store down: submitted, in silence", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		e.writeConfig(t, strings.Replace(e.siteYAML, e.st.Elasticsearch.URL, "http://"+addr, 1), -1)
		defer e.writeConfig(t, e.siteYAML, -1)
		s := e.sbatch(t, true, nil, e.overAsk()...)
		t.Logf("sbatch with the store down took %s", s.took.Round(time.Millisecond))
		if strings.Contains(s.out, "jobsight") {
			t.Errorf("output with the store down:\n%s", s.out)
		}
		e.unchanged(t, s.jobID)
	})

	t.Run("store slow beyond the limit: submitted, in silence", func(t *testing.T) {
		// A server that takes connections and never answers.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		slow := strings.Replace(e.siteYAML, e.st.Elasticsearch.URL, "http://"+l.Addr().String(), 1)
		slow += "advise: {timeout: 60s}\n" // the filter's limit (1 s) must end it
		e.writeConfig(t, slow, -1)
		defer e.writeConfig(t, e.siteYAML, -1)
		s := e.sbatch(t, true, nil, e.overAsk()...)
		t.Logf("sbatch with a store that never answers took %s (the filter's limit: 1 s)", s.took.Round(time.Millisecond))
		if strings.Contains(s.out, "jobsight") {
			t.Errorf("output with a store that never answers:\n%s", s.out)
		}
		if s.took > 30*time.Second {
			t.Errorf("sbatch took %s: the filter's 1 s limit did not end the command", s.took)
		}
		e.unchanged(t, s.jobID)
	})

	t.Run("history cached in the user's runtime directory", func(t *testing.T) {
		run := filepath.Join("/run/user", strconv.Itoa(e.uid))
		if _, err := os.Stat(run); err == nil {
			t.Skipf("%s exists (a session of the test user): not touched", run)
		}
		must(t, os.MkdirAll(run, 0o700))
		must(t, os.Chown(run, e.uid, e.gid))
		defer os.RemoveAll(run)
		args := []string{"--json", "--partition", "debug", "--mem", "2G", "--cpus-per-task", "2", "--script", e.script}
		if out, code := e.advise(t, nil, args...); code != 0 || !strings.Contains(out, `"jobs":12`) {
			t.Fatalf("advise: exit %d, %s", code, out)
		}
		files, _ := filepath.Glob(filepath.Join(run, "jobsight-advise-*.json"))
		if len(files) != 1 {
			t.Fatalf("cache files %v, want one", files)
		}
		if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != uint32(e.uid) {
			t.Errorf("cache file %s: %v %v, want 0600 and the user's", files[0], fi.Mode(), err)
		}
		// The store gone: the cached history still answers.
		e.writeConfig(t, strings.Replace(e.siteYAML, e.st.Elasticsearch.URL, "http://127.0.0.1:1", 1), -1)
		defer e.writeConfig(t, e.siteYAML, -1)
		if out, code := e.advise(t, nil, args...); code != 0 || !strings.Contains(out, `"jobs":12`) {
			t.Errorf("advise from the cache: exit %d, %s", code, out)
		}
	})
}

// advise runs the installed command's advise as the test user.
func (e *env) advise(t *testing.T, extraEnv []string, args ...string) (string, int) {
	t.Helper()
	return e.runAs(t, extraEnv, e.bin, append([]string{"advise"}, args...)...)
}

// runAs runs a program as the test user, with the environment sbatch's
// filter gives it, and returns its output and exit code.
func (e *env) runAs(t *testing.T, extraEnv []string, prog string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.uid), Gid: uint32(e.gid), Groups: []uint32{}}}
	cmd.Dir = e.home
	cmd.Env = append([]string{"HOME=" + e.home, "PATH=/usr/bin:/bin"}, extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("%s %v: %v", prog, args, err)
	}
	return string(out), 0
}
