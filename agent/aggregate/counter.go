package aggregate

// Counter totals a cumulative kernel counter (CPU time, bytes read) that may
// reset, for instance when a job's cgroup is recreated. A reading below the
// previous one is taken as a reset to zero: what was counted before it is
// kept and the counter starts again from the new reading.
//
// Totals count from the counter's own origin (zero), not from the first
// reading: a cgroup counter starts at zero when the job's cgroup is created,
// so what it shows at the agent's first reading was already used by the job.
// Increase gives the amount counted since the first reading instead.
//
// The zero Counter is ready to use. All fields are exported so that a Counter
// round-trips through a JSON checkpoint; they are not meant to be set by
// hand. A Counter is not safe for concurrent use.
type Counter struct {
	// Observations is the number of readings seen.
	Observations int64 `json:"observations"`
	// First is the first reading.
	First uint64 `json:"first"`
	// Last is the latest reading.
	Last uint64 `json:"last"`
	// Carried is what was counted up to the last reset, summed over resets.
	Carried uint64 `json:"carried"`
	// Resets is the number of readings below their predecessor.
	Resets int64 `json:"resets"`
	// LastDelta is the increase between the two latest readings, valid when
	// HasDelta is true.
	LastDelta uint64 `json:"last_delta"`
	// HasDelta is false before the second reading and right after a reset.
	HasDelta bool `json:"has_delta"`
}

// Observe records a cumulative reading v. A decrease is treated as a reset:
// the total keeps what was counted before it.
func (c *Counter) Observe(v uint64) {
	switch {
	case c.Observations == 0:
		c.First = v
		c.HasDelta = false
	case v < c.Last:
		c.Carried = saturatingAdd(c.Carried, c.Last)
		c.Resets++
		c.HasDelta, c.LastDelta = false, 0
	default:
		c.HasDelta, c.LastDelta = true, v-c.Last
	}
	c.Last = v
	c.Observations++
}

// Total returns everything counted, across resets, from the counter's
// origin; false before the first Observe. It saturates at the largest
// uint64.
func (c *Counter) Total() (uint64, bool) {
	if c.Observations == 0 {
		return 0, false
	}
	return saturatingAdd(c.Carried, c.Last), true
}

// Increase returns what was counted since the first reading, across resets;
// false before the first Observe.
func (c *Counter) Increase() (uint64, bool) {
	t, ok := c.Total()
	if !ok {
		return 0, false
	}
	return t - min(t, c.First), true
}

// Delta returns the increase between the previous reading and the latest;
// false after the first reading and after a reset.
func (c *Counter) Delta() (uint64, bool) {
	if !c.HasDelta {
		return 0, false
	}
	return c.LastDelta, true
}

// saturatingAdd returns a+b, or the largest uint64 where that overflows.
func saturatingAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}
