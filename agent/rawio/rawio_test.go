package rawio

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Pread reads what an ordinary read reads, again and again from the
// start, and names a bad descriptor.
func TestPread(t *testing.T) {
	p := t.TempDir() + "/f"
	if err := os.WriteFile(p, []byte("1234 5678\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	for i := 0; i < 2; i++ {
		n, err := Pread(int(f.Fd()), buf)
		if err != nil || !bytes.Equal(buf[:n], []byte("1234 5678\n")) {
			t.Fatalf("read %d: %q, %v", i, buf[:n], err)
		}
	}
	if _, err := Pread(-1, buf); err != syscall.EBADF {
		t.Fatalf("Pread(-1) = %v, want EBADF", err)
	}
	if n, err := Pread(int(f.Fd()), nil); n != 0 || err != nil {
		t.Fatalf("Pread into no buffer = %d, %v", n, err)
	}
}

// ProcessCPU moves with the CPU the process burns, not with wall time.
func TestProcessCPU(t *testing.T) {
	c0 := ProcessCPU()
	time.Sleep(50 * time.Millisecond)
	if d := ProcessCPU() - c0; d > 20*time.Millisecond {
		t.Errorf("asleep 50 ms, the process clock moved %v", d)
	}
	c1 := ProcessCPU()
	for end := time.Now().Add(2 * time.Second); ProcessCPU()-c1 < 20*time.Millisecond; {
		if time.Now().After(end) {
			t.Fatalf("2 s of spinning, the process clock moved %v", ProcessCPU()-c1)
		}
	}
}

// Fstat says what an ordinary fstat says.
func TestFstat(t *testing.T) {
	d := t.TempDir()
	f, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st, want unix.Stat_t
	if err := Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(f.Fd()), &want); err != nil {
		t.Fatal(err)
	}
	if st != want {
		t.Fatalf("Fstat = %+v, want %+v", st, want)
	}
	if err := Fstat(-1, &st); err != syscall.EBADF {
		t.Fatalf("Fstat(-1) = %v, want EBADF", err)
	}
}
