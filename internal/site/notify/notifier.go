package notify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/mail"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/internal/textfmt"
)

// Options are a Notifier's collaborators.
type Options struct {
	// Registerer receives the metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	// Logger receives what happens; slog.Default() when nil. Passwords
	// are never logged.
	Logger *slog.Logger
	// Now is the clock giving Enqueue its queue times; time.Now when nil.
	Now func() time.Time
}

// Notifier spools reports and mails them to their owners as digests.
// Its methods are safe for concurrent use; one process at a time may use a
// spool directory.
type Notifier struct {
	cfg      Config
	disabled bool
	from     *mail.Address
	helo     string
	classes  map[string]bool
	dir      *directory
	spool    *spool
	met      *metrics
	log      *slog.Logger
	now      func() time.Time

	flushMu sync.Mutex // one Flush at a time
	// index caches pending files' entries without their bodies (files
	// never change once written), so that a Flush with nothing due does
	// not read every report again. Under flushMu.
	index   map[string]spoolEntry
	mu      sync.Mutex // orders spool writes against Flush's listing
	pending int        // under mu
}

// New checks the configuration, opens (creating) the spool directory and
// reads the password, CA, mapping and opt-out files once so that mistakes
// show at start. A disabled configuration gives a Notifier that drops
// every report.
func New(cfg Config, opts Options) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("notify: configuration: %w", err)
	}
	met, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	n := &Notifier{cfg: cfg, met: met, log: opts.Logger, now: opts.Now, disabled: !cfg.Enabled, index: map[string]spoolEntry{}}
	if n.log == nil {
		n.log = slog.Default()
	}
	if n.now == nil {
		n.now = time.Now
	}
	if n.disabled {
		return n, nil
	}
	if n.from, err = parseFrom(cfg.From); err != nil {
		return nil, fmt.Errorf("notify: %sfrom: %w", optionPrefix, err)
	}
	n.helo = cfg.SMTP.HeloName
	if n.helo == "" {
		n.helo = defaultHelo()
	}
	if len(cfg.Classes) > 0 {
		n.classes = map[string]bool{}
		for _, c := range cfg.Classes {
			n.classes[c] = true
		}
	}
	if cfg.SMTP.Username != "" {
		if _, err := readPassword(cfg.SMTP.PasswordFile); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
	}
	if cfg.SMTP.TLS != TLSNone {
		if _, err := tlsConfig(&cfg.SMTP); err != nil {
			return nil, fmt.Errorf("notify: %w", err)
		}
	}
	n.dir = &directory{template: cfg.Recipients.AddressTemplate}
	if p := cfg.Recipients.MappingFile; p != "" {
		n.dir.mapping = &watchedFile[map[string]recipient]{path: p, parse: parseMapping}
		if _, err := n.dir.mapping.get(); err != nil {
			return nil, fmt.Errorf("notify: %srecipients.mapping_file: %w", optionPrefix, err)
		}
	}
	if p := cfg.OptOutFile; p != "" {
		n.dir.optOut = &watchedFile[map[string]bool]{path: p, parse: parseOptOut, missingOK: true}
		if _, err := n.dir.optOut.get(); err != nil {
			return nil, fmt.Errorf("notify: %sopt_out_file: %w", optionPrefix, err)
		}
	}
	if n.spool, err = openSpool(cfg.SpoolDir); err != nil {
		return nil, fmt.Errorf("notify: %sspool_dir: %w", optionPrefix, err)
	}
	names, err := n.spool.names()
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	n.setPending(len(names))
	return n, nil
}

// setPending records the number of pending reports; n.mu must be held.
func (n *Notifier) setPending(v int) {
	n.pending = v
	n.met.pending.Set(float64(v))
}

// Pending returns the number of reports waiting in the spool.
func (n *Notifier) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pending
}

// wanted reports whether the configuration mails this kind of report
// (gpu_jobs_only, classes).
func (n *Notifier) wanted(r *Report) bool {
	if n.cfg.GPUJobsOnly && !r.GPUJob {
		return false
	}
	return n.classes == nil || n.classes[reportClass(r)]
}

// jobName names a report's job in errors and logs.
func jobName(r *Report) string {
	return strconv.Quote(r.Cluster) + "/" + strconv.Quote(r.JobID)
}

// Enqueue stores a report durably in the spool (one 0600 file) to be
// mailed with the user's next digest. A report the configuration does not
// mail (gpu_jobs_only, classes), one for an opted-out user and one for a
// user without an address are dropped, counted, and nil is returned. A
// user name that would make an invalid address is refused with an error
// wrapping ErrInvalidAddress. When the mapping or opt-out file cannot be
// read the report is spooled anyway; Flush checks again before sending.
func (n *Notifier) Enqueue(r Report) error {
	if n.disabled {
		return nil
	}
	if r.Text == "" && r.HTML == "" {
		return fmt.Errorf("notify: report on job %s of user %q has neither text nor HTML", jobName(&r), r.User)
	}
	if !n.wanted(&r) {
		n.met.dropped.WithLabelValues(dropFiltered).Inc()
		return nil
	}
	_, optedOut, err := n.dir.lookup(r.User)
	switch {
	case err == nil && optedOut:
		n.met.dropped.WithLabelValues(dropOptOut).Inc()
		n.log.Debug("notify: user opted out; report dropped", "user", r.User, "job", r.JobID)
		return nil
	case errors.Is(err, errNoAddress):
		n.met.dropped.WithLabelValues(dropNoAddress).Inc()
		n.log.Debug("notify: no address for user; report dropped", "user", r.User, "job", r.JobID)
		return nil
	case errors.Is(err, ErrInvalidAddress):
		n.met.dropped.WithLabelValues(dropInvalidAddress).Inc()
		return fmt.Errorf("notify: report on job %s refused: user %q: %w", jobName(&r), r.User, err)
	case err != nil:
		n.log.Warn("notify: cannot check recipients now; report spooled and checked again before sending", "user", r.User, "err", err)
	}
	e := spoolEntry{Version: spoolVersion, QueuedAt: n.now().UTC(), Report: toSpool(r)}
	n.mu.Lock()
	defer n.mu.Unlock()
	name, err := n.spool.put(e)
	if name != "" {
		n.setPending(n.pending + 1)
	}
	if err != nil {
		return fmt.Errorf("notify: queueing report on job %s: %w", jobName(&r), err)
	}
	return nil
}

// digest is one message to send: a user's reports, oldest first, and the
// spool files it empties.
type digest struct {
	user    string
	to      *mail.Address
	reports []Report
	files   []string
}

// Flush sends every digest that is due at now: a user's digest is due
// when the batch window has passed since their oldest pending report (at
// once with a window of 0, one message per report). All digests go
// through one SMTP session. It returns the number of messages the server
// accepted.
//
// A message that fails temporarily (network, TLS, 4xx, or a failure to set
// up the session such as a refused password) leaves its reports pending
// for a later Flush. A 5xx reply to the recipient or the message moves its
// reports to the spool's failed/ directory and does not stop the other
// messages. Reports of users who opted out meanwhile are dropped. The
// error joins one error per failed message, each naming the user.
func (n *Notifier) Flush(ctx context.Context, now time.Time) (int, error) {
	if n.disabled {
		return 0, nil
	}
	n.flushMu.Lock()
	defer n.flushMu.Unlock()

	gone := 0
	defer func() {
		n.mu.Lock()
		n.setPending(max(n.pending-gone, 0))
		n.mu.Unlock()
	}()

	digests, gone0, errs := n.collect(now)
	gone += gone0
	if len(digests) == 0 {
		return 0, errors.Join(errs...)
	}

	sess, err := dial(ctx, &n.cfg.SMTP, n.helo)
	if err != nil {
		var users []string
		for _, d := range digests {
			n.met.failures.WithLabelValues(failureReason(err)).Inc()
			users = appendUnique(users, d.user)
		}
		errs = append(errs, fmt.Errorf("notify: %s to users %s not sent, reports stay pending: %w",
			textfmt.Plural(len(digests), "message"), quoteList(users), err))
		return 0, errors.Join(errs...)
	}

	sent := 0
	broken := false
	var skipped []string
	for _, d := range digests {
		if broken || ctx.Err() != nil {
			n.met.failures.WithLabelValues(reasonTemporary).Inc()
			skipped = appendUnique(skipped, d.user)
			continue
		}
		msg, err := composeMessage(n.from, d.to, d.reports, now)
		if err != nil {
			// It would fail the same way at every flush: set it aside.
			n.met.failures.WithLabelValues(reasonPermanent).Inc()
			moved := 0
			for _, f := range d.files {
				if qerr := n.spool.quarantine(f); qerr == nil {
					moved++
				}
			}
			gone += moved
			errs = append(errs, fmt.Errorf("notify: mail to user %q cannot be composed, %s moved to %s: %w",
				d.user, textfmt.Plural(moved, "report"), filepath.Join(n.cfg.SpoolDir, failedDir), err))
			continue
		}
		stage, err := sess.send(n.from.Address, d.to.Address, msg)
		if err == nil {
			for _, f := range d.files {
				if err := n.spool.remove(f); err != nil {
					errs = append(errs, fmt.Errorf("notify: mail to user %q sent, but: %w", d.user, err))
				}
			}
			gone += len(d.files)
			sent++
			n.met.sent.Inc()
			n.log.Info("notify: mail sent", "user", d.user, "reports", len(d.reports))
			continue
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		n.met.failures.WithLabelValues(failureReason(err)).Inc()
		if isPermanent(err) && (stage == stageRcpt || stage == stageData) {
			moved := 0
			for _, f := range d.files {
				if qerr := n.spool.quarantine(f); qerr != nil {
					errs = append(errs, fmt.Errorf("notify: user %q: %w", d.user, qerr))
					continue
				}
				moved++
			}
			gone += moved
			errs = append(errs, fmt.Errorf("notify: mail to user %q refused permanently, %s moved to %s: %w",
				d.user, textfmt.Plural(moved, "report"), filepath.Join(n.cfg.SpoolDir, failedDir), err))
		} else {
			errs = append(errs, fmt.Errorf("notify: mail to user %q not sent, reports stay pending: %w", d.user, err))
		}
		if smtpCode(err) == 0 {
			broken = true
		} else if rerr := sess.reset(); rerr != nil {
			broken = true
			errs = append(errs, fmt.Errorf("notify: after failed mail to user %q: %w", d.user, rerr))
		}
	}
	if len(skipped) > 0 {
		why := "connection lost"
		if ctx.Err() != nil {
			why = ctx.Err().Error()
		}
		errs = append(errs, fmt.Errorf("notify: mail to users %s not attempted (%s), reports stay pending", quoteList(skipped), why))
	}
	if broken {
		sess.close()
	} else {
		sess.quit()
	}
	return sent, errors.Join(errs...)
}

// collect reads the spool and returns the digests due at now. On the way
// it drops reports that are no longer to be mailed (filters, opt-out, no
// address) and quarantines unreadable files and reports for invalid
// addresses; gone counts the files removed from pending. An opt-out or
// mapping file that cannot be read stops everything: nothing is sent
// rather than mail to someone who opted out.
func (n *Notifier) collect(now time.Time) (digests []digest, gone int, errs []error) {
	n.mu.Lock()
	names, err := n.spool.names()
	if err == nil {
		n.setPending(len(names))
	}
	n.mu.Unlock()
	if err != nil {
		return nil, 0, []error{fmt.Errorf("notify: %w", err)}
	}

	var users []string
	queues := map[string][]spooled{}
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
		e, ok := n.index[name]
		if !ok {
			var err error
			if e, err = n.spool.read(name); err != nil {
				g, err := n.setAside(name, err)
				gone += g
				if err != nil {
					errs = append(errs, err)
				}
				continue
			}
			e.Report.Text, e.Report.HTML = "", ""
			n.index[name] = e
		}
		u := e.Report.User
		if _, ok := queues[u]; !ok {
			users = append(users, u)
		}
		queues[u] = append(queues[u], spooled{name: name, entry: e})
	}

	for name := range n.index {
		if !present[name] {
			delete(n.index, name)
		}
	}

	drop := func(items []spooled, reason string) {
		for _, it := range items {
			if err := n.spool.remove(it.name); err != nil {
				errs = append(errs, fmt.Errorf("notify: %w", err))
				continue
			}
			gone++
			n.met.dropped.WithLabelValues(reason).Inc()
		}
	}
	for _, u := range users {
		var items []spooled
		for _, it := range queues[u] {
			r := it.entry.Report.report()
			if n.wanted(&r) {
				items = append(items, it)
			} else {
				drop([]spooled{it}, dropFiltered)
			}
		}
		if len(items) == 0 {
			continue
		}
		to, optedOut, err := n.dir.lookup(u)
		switch {
		case err == nil && optedOut:
			drop(items, dropOptOut)
			continue
		case errors.Is(err, errNoAddress):
			drop(items, dropNoAddress)
			continue
		case errors.Is(err, ErrInvalidAddress):
			for _, it := range items {
				if qerr := n.spool.quarantine(it.name); qerr == nil {
					gone++
					n.met.dropped.WithLabelValues(dropInvalidAddress).Inc()
				}
			}
			errs = append(errs, fmt.Errorf("notify: reports for user %q moved to %s: %w", u, failedDir, err))
			continue
		case err != nil:
			return nil, gone, append(errs, fmt.Errorf("notify: nothing sent: %w", err))
		}
		if now.Before(items[0].entry.QueuedAt.Add(n.cfg.BatchWindow)) {
			continue
		}
		ds, g, serrs := n.split(u, to, items)
		digests, gone, errs = append(digests, ds...), gone+g, append(errs, serrs...)
	}
	return digests, gone, errs
}

// setAside handles a pending file that could not be read: gone already
// (1, nil), or moved to failed/ (1 and an error saying so).
func (n *Notifier) setAside(name string, readErr error) (int, error) {
	if errors.Is(readErr, fs.ErrNotExist) {
		return 1, nil
	}
	if qerr := n.spool.quarantine(name); qerr != nil {
		return 0, fmt.Errorf("notify: unreadable spool file: %w; %w", readErr, qerr)
	}
	return 1, fmt.Errorf("notify: unreadable spool file moved to %s: %w", failedDir, readErr)
}

// split reads a user's due reports in full and makes them into messages:
// one per report with a window of 0, else up to MaxReportsPerDigest each.
// A report whose JobDocID is already in the list replaces the earlier one
// in its place. Files that cannot be read are set aside (gone counts them).
func (n *Notifier) split(user string, to *mail.Address, items []spooled) (out []digest, gone int, errs []error) {
	type entry struct {
		r     Report
		files []string
	}
	var entries []entry
	byDoc := map[string]int{}
	for _, it := range items {
		full, err := n.spool.read(it.name)
		if err != nil {
			g, err := n.setAside(it.name, err)
			gone += g
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		r := full.Report.report()
		if i, ok := byDoc[r.JobDocID]; ok && r.JobDocID != "" {
			entries[i].r = r
			entries[i].files = append(entries[i].files, it.name)
			continue
		}
		byDoc[r.JobDocID] = len(entries)
		entries = append(entries, entry{r: r, files: []string{it.name}})
	}
	size := n.cfg.MaxReportsPerDigest
	if n.cfg.BatchWindow == 0 {
		size = 1
	}
	for start := 0; start < len(entries); start += size {
		d := digest{user: user, to: to}
		for _, e := range entries[start:min(start+size, len(entries))] {
			d.reports = append(d.reports, e.r)
			d.files = append(d.files, e.files...)
		}
		out = append(out, d)
	}
	return out, gone, errs
}

// Run flushes now and then every interval until ctx is done, logging
// failures (Flush keeps failed reports for the next round).
func (n *Notifier) Run(ctx context.Context, every time.Duration) {
	if n.disabled {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if sent, err := n.Flush(ctx, n.now()); err != nil {
			n.log.Warn("notify: flush", "sent", sent, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// appendUnique appends s unless present.
func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// quoteList formats names as "alice", "bob".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, s := range names {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
