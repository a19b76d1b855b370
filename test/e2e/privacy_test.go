package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

// Nothing the agent writes on the node (state, checkpoints, pid and lock
// files, spool, log) can be read by another user: run as nobody after a
// job of root's and a job of nobody's own, nothing under the agent's
// directories opens and no directory lists.
func TestAgentFilesArePrivate(t *testing.T) {
	e := need(t)
	t.Parallel()
	a := e.submit(t, "-J", "private-root", "-c", "1", "--mem=100M", "--wrap", "sleep 4")
	b := e.submit(t, "--uid="+stack.TestUser, "-J", "private-nobody", "-c", "1", "--mem=100M", "--wrap", "sleep 4")
	e.finalJob(t, e.docID(a), jobWait)
	e.finalJob(t, e.docID(b), jobWait)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// find prints what nobody can read or list; -L follows nothing.
	script := `for p in "$@"; do
		[ -r "$p" ] && echo "readable: $p"
		[ -d "$p" ] && ls "$p" >/dev/null 2>&1 && echo "listable: $p"
		for f in "$p"/* "$p"/jobs/*; do [ -e "$f" ] && [ -r "$f" ] && echo "readable: $f"; done
	done; true`
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, "sh"}, e.st.Agent.StateDir, e.st.Agent.SpoolDir, e.st.Agent.Log)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(nobody), Gid: uint32(nobodyGID)}}
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("checking as nobody: %v\n%s", err, out.String())
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		t.Errorf("nobody can read the agent's files:\n%s", s)
	}
	// The check itself sees files when it may: as root it lists them.
	root := exec.CommandContext(ctx, "sh", "-c", script, "sh", e.st.Agent.StateDir)
	if b, err := root.CombinedOutput(); err != nil || !strings.Contains(string(b), "listable") {
		t.Errorf("the check finds nothing even as root (%v): %s", err, b)
	}
}
