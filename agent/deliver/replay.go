package deliver

// replay.go: sending what waits in the node's spool, and sending again
// what was set aside.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

// Pending is how many items wait in the node's spool.
func (o *Outputs) Pending() int {
	st, err := o.spool.Stats()
	if err != nil {
		return 0
	}
	return st.Items
}

// Replay sends what waits in the node's spool (left by this agent or by
// earlier ones). Another agent replaying at the same time is not an error.
func (o *Outputs) Replay(ctx context.Context) {
	o.order.Lock()
	defer o.order.Unlock()
	_ = o.replayLocked(ctx)
}

// replayLocked is Replay with o.order held. An item is set aside in
// rejected/ only when its store named it at fault (documentFault: a
// mapping or parse error for that item); any other failure — the store
// down, a refusal of the credentials, a 400 for the whole request or for
// the index (a closed or unopenable index), a failed read while resolving
// the document's id — keeps it in the spool for the next replay (every
// replayInterval while the agent runs, then with the linger's back-off),
// and the health series say how many wait and why.
func (o *Outputs) replayLocked(ctx context.Context) error {
	defer o.updateSpoolMetrics()
	senders := map[string]spool.Sender{targetES: nil, targetProm: nil}
	o.mu.Lock()
	for _, t := range []string{targetES, targetProm} {
		o.waitReason[t] = waitNotConfigured
	}
	o.mu.Unlock()
	if o.es != nil {
		o.clearWaiting(targetES)
		senders[targetES] = func(ctx context.Context, it spool.Item) error {
			err := o.storeIfNewer(ctx, it.Doc())
			switch {
			case err == nil:
				return nil
			case documentFault(err):
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			o.noteRefusal("elasticsearch", err) // not the document's fault: keep it
			return err
		}
	}
	if o.rw != nil {
		o.clearWaiting(targetProm)
		senders[targetProm] = func(ctx context.Context, it spool.Item) error {
			err := o.rw.WriteEncoded(ctx, it.Body)
			if errors.Is(err, promremote.ErrPermanent) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			o.noteRefusal("prometheus", err)
			return err
		}
	}
	err := o.spool.ReplayTo(ctx, senders, func(target string, err error) {
		o.noteWaiting(target, err)
		o.log.Info("spool replay: the store did not take an item; keeping its items for the next try", "target", target, "why", waitReason(err), "err", err)
	})
	if err != nil && !errors.Is(err, spool.ErrBusy) {
		o.log.Info("spool replay stopped; will retry", "err", err)
	}
	return err
}

// clearWaiting forgets why target's items waited (a new try begins).
func (o *Outputs) clearWaiting(target string) {
	o.mu.Lock()
	delete(o.waitReason, target)
	o.mu.Unlock()
}

// ResendReport is what ResendRejected did.
type ResendReport struct {
	Restored  int  // items moved from rejected/ back into the spool
	Delivered int  // items the replay delivered (the restored ones and any that waited)
	SetAside  int  // items set aside in rejected/ again: their store still names them at fault
	Waiting   int  // items still in the spool (a store down or failing); later replays send them
	Busy      bool // another agent was replaying the spool: it sends them
}

// ResendRejected moves the items set aside in rejected/ back into the
// spool and replays it: what an admin runs (jobsight-agent
// resend-rejected) once the cause of a refusal is fixed — a mapping
// corrected, a failing server repaired.
func (o *Outputs) ResendRejected(ctx context.Context) (ResendReport, error) {
	var r ResendReport
	before, err := o.spool.Stats()
	if err != nil {
		return r, err
	}
	if r.Restored, err = o.spool.Restore(); err != nil {
		return r, err
	}
	o.order.Lock()
	err = o.replayLocked(ctx)
	o.order.Unlock()
	r.Busy = errors.Is(err, spool.ErrBusy)
	after, serr := o.spool.Stats()
	if serr != nil {
		return r, serr
	}
	// #nosec G115 -- the spool's counters only grow while it is open, and one replay moves fewer items than an int holds
	r.Delivered = int(after.Replayed - before.Replayed)
	r.SetAside = int(after.Rejected - before.Rejected) // #nosec G115 -- as above
	r.Waiting = after.Items
	if err != nil && !r.Busy {
		return r, err
	}
	return r, nil
}

// replayInterval bounds how often a running agent tries the spool.
const replayInterval = 10 * time.Second

// replaySoon replays the spool when something waits in it, at most every
// replayInterval, so that data spooled during an outage reaches the stores
// while the job still runs, not only when it ends: Prometheus refuses
// samples that come hours late.
func (o *Outputs) replaySoon(ctx context.Context) {
	o.mu.Lock()
	due := time.Since(o.lastReplay) >= replayInterval
	o.mu.Unlock()
	if due {
		o.replayIfWaiting(ctx)
	}
}

// replayIfWaiting replays the spool when anything waits in it.
func (o *Outputs) replayIfWaiting(ctx context.Context) {
	o.order.Lock()
	defer o.order.Unlock()
	o.replayIfWaitingLocked(ctx)
}

// replayIfWaitingLocked is replayIfWaiting with o.order held. It returns
// how many batches of samples still wait in the spool afterwards (the
// store is still down, or came back during the replay): a newer batch
// must queue behind them, never overtake them.
func (o *Outputs) replayIfWaitingLocked(ctx context.Context) (samplesWaiting int) {
	o.mu.Lock()
	o.lastReplay = time.Now()
	o.mu.Unlock()
	st, err := o.spool.Stats()
	switch {
	case err != nil:
	case st.Items > 0:
		_ = o.replayLocked(ctx) // refreshes the spool metrics when done
		if st.ItemsByKind[store.KindSamples] > 0 {
			if st, err = o.spool.Stats(); err == nil {
				return st.ItemsByKind[store.KindSamples]
			}
		}
	default:
		o.setSpoolMetrics(st) // the spool may have been emptied by another agent
	}
	return 0
}
