// Package cgroupv2 runs Jobsight on a real cgroup v2 node: a Debian 12
// guest under QEMU (software emulation) with systemd 252 as init and the
// unified hierarchy only, Slurm 26.05 under systemd with cgroup/v2 and
// slurmd.service Delegate=yes, the jobsight-agent and jobsight packages
// installed with dpkg and the SPANK plugin built on the node by the
// package's jobsight-spank-install, and the stores (ZincSearch, Prometheus)
// inside the guest. The host reaches the stores only through QEMU's
// forwards from 127.0.0.1.
//
// The guest's test script (guest/guest.sh) runs the jobs and copies each
// job's kernel figures (its cgroup's cpu.stat, memory.peak, memory.events,
// io.stat, pids.peak and pressure files, read by the job at its end) into
// the share; the test then compares the job documents, the series and the
// job page with them. Costs are measured on the host: the guest runs
// several times slower than native.
package cgroupv2

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/test/stack"
)

// Node is a booted cgroup v2 test node.
type Node struct {
	// Share is the host directory the guest mounts at /mnt/host.
	Share string
	// ESURL is the guest's ZincSearch Elasticsearch API through the
	// forward ("http://127.0.0.1:PORT/es"); ESUser and ESPassword its
	// admin credentials.
	ESURL, ESUser, ESPassword string
	// PromURL is the guest's Prometheus through the forward.
	PromURL string
	// Slurm is the release inside the guest.
	Slurm stack.SlurmInstall
	// Ports maps Options.Forwards' guest ports to their host ports.
	Ports map[int]int

	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	logf     func(string, ...any)
	guestLog int64
}

// Options says what to put on the node.
type Options struct {
	// Packages is a directory holding the jobsight-agent and jobsight
	// .deb packages (make packages); empty builds them into the share.
	Packages string
	// Logf receives progress lines (the guest's own among them).
	Logf func(string, ...any)
	// Script is the guest's script, relative to the repository's root
	// (default test/cgroupv2/guest/guest.sh); it may source site.sh, the
	// site before Jobsight, which is always copied beside it.
	Script string
	// Forwards are more guest ports for the host to reach, each given a
	// free 127.0.0.1 port (Node.Ports maps them).
	Forwards []int
}

// Boot builds what the node needs (Slurm 26.05, ZincSearch, the image, the
// packages and the test workload, each cached where it can be), boots the
// guest and returns while its test script runs. Stop must be called.
func Boot(ctx context.Context, share string, o Options) (*Node, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	root, err := stack.RepoRoot()
	if err != nil {
		return nil, err
	}
	in, err := stack.FindSlurm(ctx, "26.05")
	if err != nil {
		return nil, err
	}
	zinc, err := stack.ZincBinary(ctx)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	img, err := stack.RunBuildScript(ctx, "scripts/v2node/build-image.sh", in.Prefix, zinc)
	if err != nil {
		return nil, fmt.Errorf("building the guest image: %w", err)
	}
	logf("guest image %s (%.0f s)", img, time.Since(t0).Seconds())

	n := &Node{Share: share, Slurm: in, exited: make(chan struct{}), logf: logf, ESUser: "admin"}
	pkgs := filepath.Join(share, "packages")
	if err := os.MkdirAll(pkgs, 0o755); err != nil {
		return nil, err
	}
	if o.Packages == "" {
		t0 = time.Now()
		cmd := exec.CommandContext(ctx, "go", "run", "./cmd/jobsight-packages", "--out", pkgs, "--arch", "amd64")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the packages: %w\n%s", err, out)
		}
		logf("packages built (%.0f s)", time.Since(t0).Seconds())
	} else {
		debs, _ := filepath.Glob(filepath.Join(o.Packages, "*_amd64.deb"))
		if len(debs) == 0 {
			return nil, fmt.Errorf("no *_amd64.deb in %s", o.Packages)
		}
		for _, d := range debs {
			if err := copyFile(d, filepath.Join(pkgs, filepath.Base(d)), 0o644); err != nil {
				return nil, err
			}
		}
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(share, "v2work"), "./test/cgroupv2/testdata/v2work")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building v2work: %w\n%s", err, out)
	}
	script := o.Script
	if script == "" {
		script = "test/cgroupv2/guest/guest.sh"
	}
	for src, dst := range map[string]string{script: "guest.sh", "test/cgroupv2/guest/site.sh": "site.sh",
		"scripts/install-packages.sh": "install-packages.sh"} {
		if err := copyFile(filepath.Join(root, src), filepath.Join(share, dst), 0o755); err != nil {
			return nil, err
		}
	}
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	n.ESPassword = hex.EncodeToString(pw)
	for name, content := range map[string]string{"slurm-prefix": in.Prefix + "\n", "es-password": n.ESPassword} {
		if err := os.WriteFile(filepath.Join(share, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	esPort, err := stack.FreePort()
	if err != nil {
		return nil, err
	}
	promPort, err := stack.FreePort()
	if err != nil {
		return nil, err
	}
	n.ESURL = fmt.Sprintf("http://127.0.0.1:%d/es", esPort)
	n.PromURL = fmt.Sprintf("http://127.0.0.1:%d", promPort)

	console, err := os.Create(filepath.Join(share, "console.log"))
	if err != nil {
		return nil, err
	}
	fwds := []string{fmt.Sprintf("%d:4080", esPort), fmt.Sprintf("%d:9090", promPort)}
	n.Ports = map[int]int{}
	for _, g := range o.Forwards {
		p, err := stack.FreePort()
		if err != nil {
			return nil, err
		}
		n.Ports[g] = p
		fwds = append(fwds, fmt.Sprintf("%d:%d", p, g))
	}
	n.cmd = exec.Command(filepath.Join(root, "scripts/v2node/boot.sh"), append([]string{img, share}, fwds...)...)
	n.cmd.Stdout, n.cmd.Stderr = console, console
	n.cmd.Stdin = nil
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		console.Close()
		return nil, fmt.Errorf("starting QEMU: %w", err)
	}
	logf("guest booting (QEMU pid %d); console in %s", n.cmd.Process.Pid, console.Name())
	go func() {
		n.exitErr = n.cmd.Wait()
		console.Close()
		close(n.exited)
	}()
	return n, nil
}

// WaitJobs waits until the guest's script says its jobs are done and the
// agents have delivered (jobs-done), passing on the guest's progress lines.
// It fails when the script fails, the guest stops, or ctx ends.
func (n *Node) WaitJobs(ctx context.Context) error { return n.WaitFile(ctx, "jobs-done") }

// WaitFile waits until the guest's script writes name (a path in the
// share), passing on the guest's progress lines. It fails when the script
// fails, the guest stops, or ctx ends.
func (n *Node) WaitFile(ctx context.Context, name string) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		n.followGuestLog()
		if why := n.Failed(); why != "" {
			return fmt.Errorf("the guest's script failed: %s", why)
		}
		if _, err := os.Stat(filepath.Join(n.Share, name)); err == nil {
			return nil
		}
		select {
		case <-n.exited:
			n.followGuestLog()
			return fmt.Errorf("the guest stopped before writing %s (%v); console: %s", name, n.exitErr, n.tail("console.log", 3000))
		case <-ctx.Done():
			return fmt.Errorf("waiting for the guest's %s: %w; last of the console: %s", name, ctx.Err(), n.tail("console.log", 2000))
		case <-tick.C:
		}
	}
}

// Failed is why the guest's script failed, "" while it has not.
func (n *Node) Failed() string {
	b, err := os.ReadFile(filepath.Join(n.Share, "failed"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Follow passes on the guest's progress lines written since the last call
// (for a caller waiting on something else than a file of the share).
func (n *Node) Follow() { n.followGuestLog() }

// followGuestLog passes on the "===" progress lines the guest's script
// wrote since the last call.
func (n *Node) followGuestLog() {
	f, err := os.Open(filepath.Join(n.Share, "guest.log"))
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(n.guestLog, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		n.guestLog += int64(len(line))
		if strings.HasPrefix(line, "===") {
			n.logf("guest: %s", strings.TrimSpace(strings.TrimPrefix(line, "===")))
		}
	}
}

// tail is the last max bytes of a file of the share.
func (n *Node) tail(name string, max int) string {
	b, _ := os.ReadFile(filepath.Join(n.Share, name))
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Stop tells the guest's script the host is done, waits for the guest to
// power off (up to a minute), and kills QEMU otherwise.
func (n *Node) Stop() {
	if n == nil || n.cmd == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(n.Share, "host-done"), nil, 0o644)
	select {
	case <-n.exited:
		return
	case <-time.After(90 * time.Second):
		n.logf("the guest did not power off within 90 s: killing QEMU")
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
}

// Figures is one job's kernel account, read by the job at its end.
type Figures struct {
	Dir   string
	Files map[string]string
}

// Key returns the value of key in a "key value" file (cpu.stat,
// memory.events), and whether it was there.
func (f Figures) Key(file, key string) (uint64, bool) {
	for _, line := range strings.Split(f.Files[file], "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// ReadAt is when the job read its figures (time_ms, written after the
// files were read).
func (f Figures) ReadAt() (time.Time, bool) {
	ms, err := strconv.ParseInt(strings.TrimSpace(f.Files["time_ms"]), 10, 64)
	return time.UnixMilli(ms), err == nil && ms > 0
}

// CPUs is how many CPUs the job's cpuset holds (cpuset.cpus.effective,
// a list such as "0-2,5"), 0 when unknown.
func (f Figures) CPUs() int {
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(f.Files["cpuset.cpus.effective"]), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			return 0
		}
		n += b - a + 1
	}
	return n
}

// Uint returns a file holding one number (memory.peak, pids.peak).
func (f Figures) Uint(file string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(f.Files[file]), 10, 64)
	return n, err == nil
}

// IOBytes sums io.stat's rbytes and wbytes over the devices.
func (f Figures) IOBytes() (read, written uint64, ok bool) {
	for _, line := range strings.Split(f.Files["io.stat"], "\n") {
		fields := strings.Fields(line) // MAJ:MIN key=value ...
		if len(fields) < 2 {
			continue
		}
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "rbytes":
				read += n
				ok = true
			case "wbytes":
				written += n
				ok = true
			}
		}
	}
	return read, written, ok
}

// StallMicros is the "some" or "full" total of a pressure file
// (cpu.pressure, memory.pressure, io.pressure), in microseconds.
func (f Figures) StallMicros(file, kind string) (uint64, bool) {
	for _, line := range strings.Split(f.Files[file], "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != kind {
			continue
		}
		for _, kv := range fields[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// ReadFigures reads every job's figures the guest copied out, by job id.
func (n *Node) ReadFigures() (map[string]Figures, error) {
	dirs, err := os.ReadDir(filepath.Join(n.Share, "out"))
	if err != nil {
		return nil, err
	}
	out := map[string]Figures{}
	for _, d := range dirs {
		if !d.IsDir() || strings.Trim(d.Name(), "0123456789") != "" {
			continue
		}
		f := Figures{Dir: filepath.Join(n.Share, "out", d.Name()), Files: map[string]string{}}
		files, err := os.ReadDir(f.Dir)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			b, err := os.ReadFile(filepath.Join(f.Dir, file.Name()))
			if err != nil {
				return nil, err
			}
			f.Files[file.Name()] = string(b)
		}
		out[d.Name()] = f
	}
	if len(out) == 0 {
		return nil, errors.New("the guest copied out no job's figures")
	}
	return out, nil
}

// Manifest maps the jobs' names to the ids sbatch gave them.
func (n *Node) Manifest() (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(n.Share, "out", "manifest"))
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, id, ok := strings.Cut(line, " ")
		if ok {
			m[name] = strings.TrimSpace(id)
		}
	}
	return m, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode) // #nosec G703 -- a file of the test's own share directory
}
