package collector

import (
	"os"
	"testing"
)

// A process's io file, whose read can wait on the process (an exec
// closing a file on a hung NFS server), is read with an ordinary system
// call, so the rest of the agent goes on meanwhile; its stat file and the
// cgroup files are read raw. Both ways read the same.
func TestOnlyProcIOMayWait(t *testing.T) {
	tab := newProcTable("/proc", 4)
	var errs errList
	e, ok := tab.open(int32(os.Getpid()), &errs)
	if !ok {
		t.Fatalf("cannot follow this test's own process: %v", errs)
	}
	defer tab.release(e)
	if !e.io.mayWait || e.stat.mayWait {
		t.Fatalf("io read as mayWait=%v, stat as mayWait=%v; want io ordinary, stat raw", e.io.mayWait, e.stat.mayWait)
	}
	if err := tab.readIO(e); err != nil || !e.ioOK {
		t.Fatalf("reading io: %v", err)
	}
	cg := openKernFile("/proc/self/stat")
	defer cg.close()
	if cg.mayWait {
		t.Fatal("a kernel file opened for a raw read says it may wait")
	}
	buf := newBuf()
	if b, err := cg.read(&buf); err != nil || len(b) == 0 {
		t.Fatalf("raw read of /proc/self/stat: %q, %v", b, err)
	}
	// Beyond the cap (files opened, read and closed each pass) too.
	none := newProcTable("/proc", -1)
	e2, ok := none.open(int32(os.Getpid()), &errs)
	if !ok || !e2.io.mayWait || e2.held {
		t.Fatalf("unheld entry: ok %v, io mayWait %v, held %v", ok, e2 != nil && e2.io.mayWait, e2 != nil && e2.held)
	}
	if err := none.readIO(e2); err != nil {
		t.Fatal(err)
	}
}
