package report

import (
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// A job whose memory is mostly shared (/dev/shm) shows it and its working
// set next to the small resident peak; a document without them (an older
// agent) shows neither.
func TestMemoryBarsShowSharedMemoryAndWorkingSet(t *testing.T) {
	t.Parallel()
	mib := int64(1 << 20)
	j := &jobmodel.Job{Usage: jobmodel.Usage{Memory: &jobmodel.MemoryUsage{
		PeakBytes: jobmodel.Ptr(160 * mib), RSSPeakBytes: jobmodel.Ptr(2 * mib), ShmemPeakBytes: jobmodel.Ptr(150 * mib),
		WorkingSetPeakBytes: jobmodel.Ptr(151 * mib), LimitBytes: jobmodel.Ptr(400 * mib)}}}
	got := memoryBars(j, false)
	for _, want := range []string{"peak resident", "peak shared (/dev/shm, tmpfs)", "peak working set", "peak incl. page cache"} {
		if !strings.Contains(got, want) {
			t.Errorf("memory bars lack %q", want)
		}
	}
	j.Memory.ShmemPeakBytes, j.Memory.WorkingSetPeakBytes = nil, nil
	if got := memoryBars(j, false); strings.Contains(got, "shared") || strings.Contains(got, "working set") {
		t.Error("rows for figures the document does not have")
	}
}
