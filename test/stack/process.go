// Package stack starts the real servers Jobsight runs against — a Slurm
// cluster (munge, slurmctld, slurmd), Prometheus with the remote-write
// receiver, and an Elasticsearch-API server — on 127.0.0.1 with private
// ports and state under one directory. The integration tests and the
// jobsight-stack command both use it, so what a developer runs by hand is what
// CI tests. Every server is stopped by PID; nothing is left behind.
package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Server is one running server process.
type Server struct {
	Name string // short name, e.g. "prometheus"
	URL  string // base URL where it answers, empty for servers without HTTP
	Dir  string // its state directory
	Log  string // path of its combined stdout/stderr log

	cmd  *exec.Cmd
	done chan error
	// how it was started, for Restart
	env  []string
	bin  string
	args []string
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// daemonPort is a free port below Linux's ephemeral range (32768 and up)
// for a daemon that binds it only later (slurmctld and slurmd read theirs
// from slurm.conf): a port of that range, free when picked, can be taken
// meanwhile by any outgoing connection of a test running beside it (seen
// on CI: slurmd "Unable to bind listen port (40035): Address already in
// use"). The search starts at a place given by the process id and a
// counter, so that stacks started at once by different test processes
// rarely try the same ports.
func daemonPort() (int, error) {
	start := (os.Getpid()*7919 + int(daemonPorts.Add(1))*131) % 12000
	for i := range 200 {
		p := 20000 + (start+i)%12000
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return FreePort()
}

// daemonPorts counts daemonPort's calls in this process.
var daemonPorts atomic.Int64

// startProcess starts name with args in its own process group, logging to
// dir/<name>.log, and records its PID in dir/<name>.pid.
func startProcess(name, dir string, env []string, bin string, args ...string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	_ = os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	s := &Server{Name: name, Dir: dir, Log: logPath, cmd: cmd, done: make(chan error, 1), env: env, bin: bin, args: args}
	go func() { s.done <- cmd.Wait(); logf.Close() }()
	return s, nil
}

// Restart starts a stopped server again the way it was started (same
// port, same state), waiting until its URL answers when it has one: tests
// take a store down and bring it back.
func (s *Server) Restart(ctx context.Context) error {
	_ = s.Stop()
	n, err := startProcess(s.Name, s.Dir, s.env, s.bin, s.args...)
	if err != nil {
		return err
	}
	s.cmd, s.done = n.cmd, n.done
	if s.URL != "" {
		return s.waitHTTP(ctx, s.URL+"/")
	}
	return nil
}

// PID returns the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Exited reports whether the process has already exited.
func (s *Server) Exited() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the server's process group, waits up to 10 s, then
// sends SIGKILL. Stopping a stopped server is not an error.
func (s *Server) Stop() error {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	var err error
	select {
	case err = <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err = <-s.done
	}
	s.done <- err // keep Exited true after Stop
	_ = os.Remove(filepath.Join(s.Dir, s.Name+".pid"))
	return nil
}

// waitHTTP polls url until it answers with a status below 500, the process
// exits, or ctx ends.
func (s *Server) waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if s.Exited() {
			return fmt.Errorf("%s exited before answering %s; see %s", s.Name, url, s.Log)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s at %s: %w (log %s)", s.Name, url, errors.Join(ctx.Err(), err), s.Log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
