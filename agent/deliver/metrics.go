package deliver

// metrics.go: the spool and refusal health metrics.

import (
	"errors"

	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// noteRefusal counts a store's refusal of the agent's credentials and says
// so once per store and process, at error level, with what to fix: it is
// a configuration problem, not an outage, and the data waits in the spool
// (within spool.max_bytes) until it is fixed.
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

// Why items wait in the spool, for jobsight_agent_spool_waiting_items.
const (
	waitPending       = "pending"        // not tried since spooled
	waitUnavailable   = "unavailable"    // no answer, 429, 5xx
	waitRefused       = "refused"        // 401/403: the agent's credentials
	waitStoreError    = "store_error"    // another refusal that is not the document's fault (a 400 for the request or the index, a failed read)
	waitDocument      = "document_error" // the store named the document at fault: set aside at the next replay
	waitNotConfigured = "not_configured" // the store is no longer in the config
)

// waitReason classifies a store's error for the health series.
func waitReason(err error) string {
	switch {
	case errors.Is(err, store.ErrAccessDenied):
		return waitRefused
	case documentFault(err):
		return waitDocument
	case errors.Is(err, elasticsearch.ErrUnavailable), errors.Is(err, promremote.ErrRetryable):
		return waitUnavailable
	}
	return waitStoreError
}

// documentFault reports whether err says the document itself is at fault:
// the server named a document-level error for it, or it is not even JSON.
// Only such documents are set aside in rejected/; everything else waits in
// the spool and is tried again.
func documentFault(err error) bool {
	return errors.Is(err, elasticsearch.ErrDocument) || errors.Is(err, errBadDocument)
}

// noteWaiting records why a store's items wait (err: its last answer).
func (o *Outputs) noteWaiting(target string, err error) {
	o.mu.Lock()
	o.waitReason[target] = waitReason(err)
	o.mu.Unlock()
}

// updateSpoolMetrics mirrors the spool's size and drops in the health
// metrics.
func (o *Outputs) updateSpoolMetrics() {
	if st, err := o.spool.Stats(); err == nil {
		o.setSpoolMetrics(st)
	}
}

// setSpoolMetrics sets the spool's health metrics from its stats.
func (o *Outputs) setSpoolMetrics(st spool.Stats) {
	if o.health == nil {
		return
	}
	o.health.SpoolBytes.Set(float64(st.Bytes))
	o.health.SpoolItems.Set(float64(st.Items))
	o.health.SpoolSetAsideItems.WithLabelValues("rejected").Set(float64(st.RejectedFiles))
	o.health.SpoolSetAsideItems.WithLabelValues("corrupt").Set(float64(st.CorruptFiles))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.health.SpoolWaiting.Reset()
	for target, n := range map[string]int{
		targetES:   st.ItemsByKind[store.KindJobDoc] + st.ItemsByKind[store.KindNodeDoc],
		targetProm: st.ItemsByKind[store.KindSamples],
	} {
		if n > 0 {
			why := o.waitReason[target]
			if why == "" {
				why = waitPending
			}
			o.health.SpoolWaiting.WithLabelValues(target, why).Set(float64(n))
		}
	}
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
