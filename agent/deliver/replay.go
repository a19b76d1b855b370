package deliver

// replay.go: sending what waits in the node's spool.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobsight/jobsight/internal/spool"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/internal/store/promremote"
)

func (o *Outputs) Pending() int {
	st, err := o.spool.Stats()
	if err != nil {
		return 0
	}
	return st.Items
}

func (o *Outputs) Replay(ctx context.Context) {
	o.order.Lock()
	defer o.order.Unlock()
	o.replayLocked(ctx)
}

// replayLocked is Replay with o.order held.
func (o *Outputs) replayLocked(ctx context.Context) {
	defer o.updateSpoolMetrics()
	senders := map[string]spool.Sender{targetES: nil, targetProm: nil}
	if o.es != nil {
		senders[targetES] = func(ctx context.Context, it spool.Item) error {
			err := o.storeIfNewer(ctx, it.Doc())
			if errors.Is(err, store.ErrAccessDenied) {
				o.noteRefusal("elasticsearch", err) // not the document's fault: keep it
			} else if err != nil && !errors.Is(err, elasticsearch.ErrUnavailable) {
				return fmt.Errorf("%w: %v", spool.ErrReject, err)
			}
			return err
		}
	}
	if o.rw != nil {
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
		o.log.Info("spool replay: store still down; keeping its items", "target", target, "err", err)
	})
	if err != nil && !errors.Is(err, spool.ErrBusy) {
		o.log.Info("spool replay stopped; will retry", "err", err)
	}
}

const replayInterval = 10 * time.Second

func (o *Outputs) replaySoon(ctx context.Context) {
	o.mu.Lock()
	due := time.Since(o.lastReplay) >= replayInterval
	o.mu.Unlock()
	if due {
		o.replayIfWaiting(ctx)
	}
}

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
		o.replayLocked(ctx) // refreshes the spool metrics when done
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
