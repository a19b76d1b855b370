// Package arm64 runs the arm64 node agent (Grace Hopper and other arm64
// nodes) on this amd64 machine under user-mode emulation: built as the
// package builds it (cgo, cross compiled with aarch64-linux-gnu-gcc),
// run by qemu-aarch64-static with Debian's arm64 C library
// (libc6-arm64-cross, /usr/aarch64-linux-gnu). make arm64-test runs it
// after the agent's unit tests under the same emulation. The host kernel
// answers every system call: /proc and the cgroups are this machine's.
package arm64

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/test/stack"
)

const (
	crossCC   = "aarch64-linux-gnu-gcc"
	qemu      = "qemu-aarch64-static"
	sysroot   = "/usr/aarch64-linux-gnu" // libc6-arm64-cross
	version   = "9.9.9+arm64test"
	agentPath = "github.com/jobsight/jobsight/agent/jobagent.Version"
)

// buildAgent cross compiles the agent as cmd/jobsight-packages does for
// --arch arm64.
func buildAgent(t *testing.T) string {
	t.Helper()
	for _, p := range []string{crossCC, qemu} {
		if _, err := exec.LookPath(p); err != nil {
			stack.Unavailable(t, "needs %s (Debian gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static; .ci/run installs them)", p)
		}
	}
	if _, err := os.Stat(filepath.Join(sysroot, "lib", "ld-linux-aarch64.so.1")); err != nil {
		stack.Unavailable(t, "needs the arm64 C library under %s (Debian libc6-arm64-cross): %v", sysroot, err)
	}
	bin := filepath.Join(t.TempDir(), "jobsight-agent")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -X "+agentPath+"="+version, "-o", bin, "./cmd/jobsight-agent")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=1", "CC="+crossCC)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for arm64: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("built for %v, not aarch64", f.Machine)
	}
	// cgo: dynamically linked against the C library (NVML and AMD SMI
	// are opened at run time, never linked).
	libs, _ := f.ImportedLibraries()
	if !containsPrefix(libs, "libc.so") {
		t.Fatalf("the arm64 agent links %v: not a cgo build against glibc", libs)
	}
	for _, l := range libs {
		if strings.Contains(l, "nvidia") || strings.Contains(l, "amd_smi") || strings.Contains(l, "rocm") {
			t.Errorf("the arm64 agent links %s: GPU libraries must be loaded at run time, a CPU node lacks them", l)
		}
	}
	return bin
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// emulated runs the arm64 binary under qemu-aarch64-static.
func emulated(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(qemu, append([]string{"-L", sysroot, bin}, args...)...)
	// No GPU library is installed for arm64 here, as on a CPU node; make
	// sure none of the host's (amd64) would be found either.
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH=")
	return cmd
}

// A user on an arm64 node runs `jobsight-agent run -- CMD` outside Slurm
// and checks what it printed and the document it wrote: the command's own
// exit status, the CPU time it burned, the bytes it wrote, the agent's
// version; and the agent starts without NVML or AMD SMI.
func TestArm64AgentRunsACommand(t *testing.T) {
	bin := buildAgent(t)

	out, err := emulated(bin, "version").CombinedOutput()
	if err != nil || string(out) != "jobsight-agent "+version+"\n" {
		t.Fatalf("jobsight-agent version under %s: %q, %v", qemu, out, err)
	}

	docs := t.TempDir()
	blob := filepath.Join(t.TempDir(), "blob")
	// About a second of the shell's own CPU, 24 MiB written, exit 3.
	script := `i=0; while [ $i -lt 800000 ]; do i=$((i+1)); done; head -c 25165824 /dev/zero > "$1"; exit 3`
	cmd := emulated(bin, "run", "--output-dir", docs, "--", "sh", "-c", script, "sh", blob)
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("jobsight-agent run: %v (want the command's exit status 3)\nstderr:\n%s", err, stderr.String())
	}
	summary := stderr.String()
	t.Logf("summary under emulation:\n%s", summary)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^jobsight: "sh -c .*" ran [0-9.]+ s on \S+ and exited with 3 \(FAILED\)$`),
		regexp.MustCompile(`(?m)^  cpu +[0-9.]+ core-seconds`),
		regexp.MustCompile(`(?m)^  i/o +read .*, written 24\.0 MiB$`),
		regexp.MustCompile(`(?m)^  document +` + regexp.QuoteMeta(docs) + `/\S+\.json$`),
	} {
		if !want.MatchString(summary) {
			t.Errorf("the summary lacks %s", want)
		}
	}
	for _, bad := range []string{"panic", "level=ERROR", "SIGSEGV", "nvml", "NVML"} {
		if strings.Contains(summary, bad) {
			t.Errorf("the run printed %q (no GPU library here must be silent)", bad)
		}
	}

	files, _ := filepath.Glob(filepath.Join(docs, "*.json"))
	if len(files) != 1 {
		t.Fatalf("documents in %s: %v, want one", docs, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Source       string  `json:"source"`
		State        string  `json:"state"`
		ExitCode     *int    `json:"exit_code"`
		AgentVersion string  `json:"agent_version"`
		Elapsed      float64 `json:"elapsed_seconds"`
		CPU          struct {
			CoreSeconds *float64 `json:"core_seconds"`
		} `json:"cpu"`
		IO struct {
			WrittenBytes *int64 `json:"written_bytes"`
		} `json:"io"`
		Sampling struct {
			Count int `json:"count"`
		} `json:"sampling"`
		Final bool `json:"final"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	if doc.Source != "standalone" || doc.State != "FAILED" || doc.ExitCode == nil || *doc.ExitCode != 3 || !doc.Final {
		t.Errorf("document: source %q, state %q, exit code %v, final %v; want standalone, FAILED, 3, final", doc.Source, doc.State, doc.ExitCode, doc.Final)
	}
	if doc.AgentVersion != version {
		t.Errorf("document agent_version %q, want %q", doc.AgentVersion, version)
	}
	// The shell's loop runs natively (qemu runs only the agent), so its
	// CPU time is real: at least a tenth of a core-second.
	if doc.CPU.CoreSeconds == nil || *doc.CPU.CoreSeconds < 0.1 || *doc.CPU.CoreSeconds > doc.Elapsed*2+1 {
		t.Errorf("document cpu.core_seconds %v over %.1f s", doc.CPU.CoreSeconds, doc.Elapsed)
	}
	if doc.IO.WrittenBytes == nil || *doc.IO.WrittenBytes < 25165824 || *doc.IO.WrittenBytes > 2*25165824 {
		t.Errorf("document io.written_bytes %v, want the 25165824 the command wrote", doc.IO.WrittenBytes)
	}
	if doc.Sampling.Count < 2 {
		t.Errorf("document sampling.count %d: the agent sampled at most once", doc.Sampling.Count)
	}
}
