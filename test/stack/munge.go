package stack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// Munge is a running munged serving one private socket.
type Munge struct {
	*Server
	// Socket is the path of munged's socket (Slurm's AuthInfo=socket=...).
	Socket string
	// RunDir holds the key, socket, pid, seed and log. It lives under /run
	// because munged runs as user munge and refuses directories it cannot
	// check (and test temp dirs are root-only).
	RunDir string
}

// StartMunge starts munged as user munge with a freshly generated key and a
// private socket, so it never touches the host's /run/munge. It needs root.
func StartMunge(ctx context.Context, logDir string) (*Munge, error) {
	u, err := user.Lookup("munge")
	if err != nil {
		return nil, fmt.Errorf("looking up user munge (is the munge package installed?): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	bin, err := exec.LookPath("munged")
	if err != nil {
		return nil, fmt.Errorf("finding munged: %w", err)
	}
	runDir, err := os.MkdirTemp("/run", "jobsight-munge-")
	if err != nil {
		return nil, fmt.Errorf("creating munge run dir: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(runDir) }
	key := make([]byte, 128)
	if _, err := rand.Read(key); err != nil {
		cleanup()
		return nil, fmt.Errorf("generating munge key: %w", err)
	}
	keyPath := filepath.Join(runDir, "munge.key")
	if err := os.WriteFile(keyPath, key, 0o400); err != nil {
		cleanup()
		return nil, fmt.Errorf("writing munge key: %w", err)
	}
	for _, p := range []string{runDir, keyPath} {
		if err := os.Chown(p, uid, gid); err != nil {
			cleanup()
			return nil, fmt.Errorf("giving %s to munge: %w", p, err)
		}
	}
	if err := os.Chmod(runDir, 0o755); err != nil {
		cleanup()
		return nil, fmt.Errorf("chmod %s: %w", runDir, err)
	}
	socket := filepath.Join(runDir, "munge.socket")
	// setpriv execs munged in place (runuser would fork), so munged is our
	// direct child: stopped and reaped by PID.
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("finding setpriv (util-linux): %w", err)
	}
	srv, err := startProcess("munged", logDir, nil, setpriv, "--reuid="+u.Uid, "--regid="+u.Gid, "--clear-groups", "--", bin, "--foreground",
		"--socket="+socket, "--key-file="+keyPath,
		"--pid-file="+filepath.Join(runDir, "munged.pid"),
		"--seed-file="+filepath.Join(runDir, "munged.seed"),
		"--log-file="+filepath.Join(runDir, "munged.log"),
		"--num-threads=2")
	if err != nil {
		cleanup()
		return nil, err
	}
	m := &Munge{Server: srv, Socket: socket, RunDir: runDir}
	for {
		if _, err := os.Stat(socket); err == nil {
			return m, nil
		}
		if srv.Exited() {
			log, _ := os.ReadFile(filepath.Join(runDir, "munged.log"))
			m.Stop()
			return nil, fmt.Errorf("munged exited before creating %s; see %s: %s", socket, srv.Log, log)
		}
		select {
		case <-ctx.Done():
			m.Stop()
			return nil, fmt.Errorf("waiting for munged socket %s: %w", socket, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops munged and removes its run directory (keeping a copy of its log
// beside the process log).
func (m *Munge) Stop() error {
	if m == nil {
		return nil
	}
	err := m.Server.Stop()
	if log, rerr := os.ReadFile(filepath.Join(m.RunDir, "munged.log")); rerr == nil {
		_ = os.WriteFile(filepath.Join(m.Server.Dir, "munged-internal.log"), log, 0o644) // #nosec G703 -- into the test stack's own directory
	}
	return errors.Join(err, os.RemoveAll(m.RunDir))
}
