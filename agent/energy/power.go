package energy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// DCMIRunner runs `ipmitool dcmi power reading` and returns its output.
type DCMIRunner func(ctx context.Context) ([]byte, error)

// IPMITool runs the ipmitool at path (in-band, through the BMC's
// /dev/ipmi0 device).
func IPMITool(path string) DCMIRunner {
	return func(ctx context.Context) ([]byte, error) {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, "dcmi", "power", "reading")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s dcmi power reading: %w", path, ctx.Err())
		}
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if i := strings.IndexByte(msg, '\n'); i >= 0 {
				msg = msg[:i]
			}
			if len(msg) > 200 {
				msg = msg[:200]
			}
			return nil, fmt.Errorf("%s dcmi power reading: %w: %s", path, err, msg)
		}
		return out, nil
	}
}

// PowerOptions tune a PowerMeter.
type PowerOptions struct {
	// Interval between readings (the BMC is slow and shared: seconds to
	// minutes, not every sample).
	Interval time.Duration
	// Timeout of one reading.
	Timeout time.Duration
	// Tries is how many failed readings in a row before any success make
	// the meter give up for good (no tool, no BMC, no DCMI): 3 if 0.
	Tries int
	Now   func() time.Time
	Log   *slog.Logger
}

// PowerMeter reads the node's wall power from its BMC in a goroutine of its
// own, every Interval, so sampling never waits for the BMC. A node without
// ipmitool, a BMC or DCMI power readings gives up after its first tries and
// says why once, instead of failing every interval.
type PowerMeter struct {
	run  DCMIRunner
	opts PowerOptions

	mu       sync.Mutex
	watts    float64
	at       time.Time
	gaveUp   string
	failures int
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewPowerMeter makes a meter reading through run; Start starts it.
func NewPowerMeter(run DCMIRunner, opts PowerOptions) *PowerMeter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Tries <= 0 {
		opts.Tries = 3
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &PowerMeter{run: run, opts: opts}
}

// Start reads at once and then every Interval until Close.
func (p *PowerMeter) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.opts.Interval)
		defer t.Stop()
		for p.ReadOnce(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// ReadOnce takes one reading and reports whether the meter should go on.
func (p *PowerMeter) ReadOnce(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	out, err := p.run(rctx)
	cancel()
	if ctx.Err() != nil {
		return false
	}
	var r PowerReading
	if err == nil {
		r, err = ParseDCMIPowerReading(out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		if p.failures > 0 && !p.at.IsZero() {
			p.opts.Log.Info("node power readable again", "source", "ipmi dcmi")
		}
		p.watts, p.at, p.failures = r.Watts(), p.opts.Now(), 0
		return true
	}
	p.failures++
	never := p.at.IsZero()
	if never && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, ErrPowerInactive) || p.failures >= p.opts.Tries) {
		p.gaveUp = err.Error()
		p.opts.Log.Info("no node power reading (IPMI DCMI); energy_node will be missing", "err", err)
		return false
	}
	if p.failures == 1 && !never {
		p.opts.Log.Warn("node power reading failed; retrying every interval", "err", err)
	}
	return true
}

// Latest returns the newest reading if it is at most maxAge old.
func (p *PowerMeter) Latest(maxAge time.Duration) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at.IsZero() || p.opts.Now().Sub(p.at) > maxAge {
		return 0, false
	}
	return p.watts, true
}

// MaxAge is how old a reading may be and still stand for now: three
// intervals (a slow or missed reading or two).
func (p *PowerMeter) MaxAge() time.Duration { return 3*p.opts.Interval + p.opts.Timeout }

// Unavailable says why the meter gave up ("" while it has not).
func (p *PowerMeter) Unavailable() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gaveUp
}

// Close stops the meter's goroutine.
func (p *PowerMeter) Close() error {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	return nil
}
