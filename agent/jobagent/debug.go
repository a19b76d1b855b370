package jobagent

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/privdir"
)

// ProfileSeconds is how long the CPU profile SIGUSR1 asks for runs.
const ProfileSeconds = 60

// profileOnSignal makes SIGUSR1 write a CPU profile of the running node
// agent (ProfileSeconds long) and a heap profile into dir (state_dir's
// profiles/, 0700), to see where its time goes on a busy node; the
// returned function stops listening. Nothing is profiled until the signal
// comes, and a signal while a profile runs is ignored. A CPU profile
// already running for the whole process (cpu_profile_dir) leaves no room
// for a second: the signal is then logged and ignored.
func profileOnSignal(dir, node string, log *slog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
			}
			paths, err := writeProfiles(dir, node, ProfileSeconds*time.Second, done)
			select { // a signal that came while profiling is dropped
			case <-ch:
			default:
			}
			if err != nil {
				log.Warn("SIGUSR1: no profile", "err", err)
				continue
			}
			log.Info("SIGUSR1: profiles written", "cpu", paths[0], "heap", paths[1])
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// writeProfiles writes a CPU profile of d (cut short when done closes)
// and then a heap profile into dir.
func writeProfiles(dir, node string, d time.Duration, done <-chan struct{}) ([2]string, error) {
	var paths [2]string
	if err := privdir.Ensure(dir); err != nil { // 0700, root's, no link
		return paths, err
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i, kind := range []string{"cpu", "heap"} {
		paths[i] = filepath.Join(dir, fmt.Sprintf("agent@%s-%s.%s.pprof", node, stamp, kind))
	}
	create := func(p string) (*os.File, error) {
		return os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	f, err := create(paths[0])
	if err != nil {
		return paths, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(paths[0])
		return paths, fmt.Errorf("CPU profile: %w (cpu_profile_dir profiles this process already?)", err)
	}
	select {
	case <-time.After(d):
	case <-done:
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		return paths, err
	}
	h, err := create(paths[1])
	if err != nil {
		return paths, err
	}
	defer h.Close()
	return paths, pprof.Lookup("heap").WriteTo(h, 0)
}
