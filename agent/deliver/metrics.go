package deliver

// metrics.go: the spool and refusal health metrics.

import (
	"errors"

	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
)

func (o *Outputs) noteRefusal(target string, err error) {
	if !errors.Is(err, store.ErrAccessDenied) {
		return
	}
	if o.health != nil {
		o.health.SinkRefused.WithLabelValues(target).Inc()
	}
	o.mu.Lock()
	first := !o.refusedLogged[target]
	if o.refusedLogged == nil {
		o.refusedLogged = map[string]bool{}
	}
	o.refusedLogged[target] = true
	o.mu.Unlock()
	if first {
		o.log.Error(target+" refuses the agent's credentials: check "+target+".username and password_file (or the token); the data waits in the spool", "err", err)
	}
}

func (o *Outputs) updateSpoolMetrics() {
	if st, err := o.spool.Stats(); err == nil {
		o.setSpoolMetrics(st)
	}
}

func (o *Outputs) setSpoolMetrics(st spool.Stats) {
	if o.health == nil {
		return
	}
	o.health.SpoolBytes.Set(float64(st.Bytes))
	o.health.SpoolItems.Set(float64(st.Items))
	o.mu.Lock()
	defer o.mu.Unlock()
	for kind, n := range st.Dropped {
		if d := n - o.lastDropped[kind]; d > 0 {
			o.health.SpoolDropped.WithLabelValues(kind.String()).Add(float64(d))
			o.lastDropped[kind] = n
		}
	}
	if d := st.Rejected - o.lastRejected; d > 0 {
		o.health.SpoolSetAside.WithLabelValues("rejected").Add(float64(d))
		o.lastRejected = st.Rejected
	}
	if d := st.Corrupt - o.lastCorrupt; d > 0 {
		o.health.SpoolSetAside.WithLabelValues("corrupt").Add(float64(d))
		o.lastCorrupt = st.Corrupt
	}
}
