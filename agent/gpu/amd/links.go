package amd

import (
	"math"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// AMD SMI gives a device's XGMI traffic only as accumulators: the
// kilobytes received (xgmi_read_data_acc) and sent (xgmi_write_data_acc)
// over each link since the driver loaded, in amdsmi_gpu_metrics_t (GPU
// metrics v1.4 and later: MI300 and newer; an MI250X reports them "not
// supported"), and as the "read"/"write" of `amd-smi xgmi -m`. A rate is
// the difference of two reads divided by the time between them, so the
// first read of a device leaves gpu.FieldLink missing.

// maxLinkKB bounds an accumulator value: the library stores UINT64_MAX for
// "not supported", amd-smi 7.x prints that value (or a sum containing it),
// and no real counter gets near 2^53 KB (9 EB). Below it, float64 holds the
// value exactly.
const maxLinkKB = 1 << 53

// maxPlausibleLinkBytesPerSecond bounds a device's XGMI throughput, all
// links together: an MI300X's seven links carry 896 GB/s at most, so 10
// TB/s is safely beyond any device of this generation.
const maxPlausibleLinkBytesPerSecond = 10e12

// minLinkWindow is the shortest time between two reads that gives a rate:
// the firmware updates the accumulators in steps, so a rate over a few
// milliseconds (the read at open and the first sample right after it) would
// be noise. A shorter interval leaves the field missing and keeps the older
// reference.
const minLinkWindow = 500 * time.Millisecond

// xgmiCounters is one read of a device's XGMI accumulators: the sums over
// the links that reported both directions, and which links those were.
type xgmiCounters struct {
	rxKB, txKB uint64
	links      uint64 // bit i: link i is in the sums
	ok         bool
}

// add counts link i (0–63) when both of its values are plausible counters;
// a link reporting "not supported" (or anything else) is left out.
func (c *xgmiCounters) add(i int, readKB, writeKB float64) {
	if i < 0 || i >= 64 || !linkKB(readKB) || !linkKB(writeKB) {
		return
	}
	c.rxKB += uint64(readKB)
	c.txKB += uint64(writeKB)
	c.links |= 1 << i
	c.ok = true
}

// addRaw counts link i from the library's uint64 accumulators.
func (c *xgmiCounters) addRaw(i int, readKB, writeKB uint64) {
	if readKB >= maxLinkKB || writeKB >= maxLinkKB {
		return
	}
	c.add(i, float64(readKB), float64(writeKB))
}

// plausibleLinkRate reports whether v is a possible throughput in bytes/s
// (NaN is not).
func plausibleLinkRate(v float64) bool { return v >= 0 && v <= maxPlausibleLinkBytesPerSecond }

func linkKB(v float64) bool {
	return v >= 0 && v < maxLinkKB && v == math.Trunc(v)
}

// linkRate turns successive counters of one device into throughput.
type linkRate struct {
	last xgmiCounters
	at   time.Time
	have bool
	// gap is the time between the two reference reads before: a read
	// staleLinkAfter times later than that (nobody followed the device
	// meanwhile, or the agent was stopped) starts over rather than give a
	// rate over time that may be another job's.
	gap time.Duration
}

// staleLinkAfter is how many usual read gaps (at least a second each) a
// rate may span.
const staleLinkAfter = 3

// update takes the counters read at now and returns the receive and send
// throughput in bytes/s since the reference read (KB = 1024 bytes, as
// amd-smi converts them). ok is false, and the field stays missing, when
// there is no reference yet, the set of links changed, a counter went
// backwards (a driver reload), the interval is below minLinkWindow, or it
// spans a pause (staleLinkAfter usual gaps); the new counters then become the reference, except when the interval
// is merely too short. Counters that are not ok leave the reference alone,
// so a pass that could not read them costs one missing value, not two.
func (l *linkRate) update(c xgmiCounters, now time.Time) (rx, tx float64, ok bool) {
	if !c.ok {
		return 0, 0, false
	}
	prev, prevAt, had := l.last, l.at, l.have
	dt := now.Sub(prevAt)
	if had && prev.links == c.links && dt > 0 && dt < minLinkWindow &&
		c.rxKB >= prev.rxKB && c.txKB >= prev.txKB {
		return 0, 0, false // too soon: keep the older reference
	}
	stale := had && l.gap > 0 && dt > staleLinkAfter*max(l.gap, time.Second)
	if had && dt > 0 {
		l.gap = dt
	}
	l.last, l.at, l.have = c, now, true
	if !had || stale || prev.links != c.links || dt <= 0 || c.rxKB < prev.rxKB || c.txKB < prev.txKB {
		return 0, 0, false
	}
	s := dt.Seconds()
	rx = float64(c.rxKB-prev.rxKB) * 1024 / s
	tx = float64(c.txKB-prev.txKB) * 1024 / s
	if !plausibleLinkRate(rx) || !plausibleLinkRate(tx) {
		return 0, 0, false
	}
	return rx, tx, true
}

// setLinkRates stores the device's XGMI throughput from the counters read
// at now into r, or leaves gpu.FieldLink missing.
func (c *checker) setLinkRates(pos int, x xgmiCounters, now time.Time, r *gpu.Reading) {
	if pos < 0 || pos >= len(c.links) {
		return
	}
	if rx, tx, ok := c.links[pos].update(x, now); ok {
		r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond = rx, tx
		r.Set(gpu.FieldLink)
	}
}
