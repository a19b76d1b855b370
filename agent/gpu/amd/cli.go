package amd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/jobsight/jobsight/agent/gpu"
)

// Runner runs a command and returns its standard output. The error should
// say why the command failed (its exit status and standard error).
// ExecRunner runs real commands; tests pass fakes.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecRunner runs name with args and returns its standard output; a failed
// command's error carries the start of its standard error.
func ExecRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			if len(msg) > 512 {
				msg = msg[:512] + "…"
			}
			return out, fmt.Errorf("%w: %s", err, msg)
		}
		return out, err
	}
	return out, nil
}

// CLIOptions configures OpenCLI. The zero value uses the defaults.
type CLIOptions struct {
	// Path is the amd-smi executable; default "amd-smi" (looked up on
	// PATH by the Runner).
	Path string
	// Timeout bounds each amd-smi command; default 30s.
	Timeout time.Duration
	// MaxAge is how long one answer of amd-smi metric (or process) serves
	// Read (or Processes) calls: a sampling pass reads every GPU from one
	// answer, and a new answer is fetched when a GPU is read a second time
	// or the answer is older than MaxAge. Default 5s.
	MaxAge time.Duration
	// SysRoot is where sysfs is mounted, for the render node minors of
	// GPUs whose amd-smi is too old to list them; default "/sys".
	SysRoot string
}

func (o CLIOptions) withDefaults() CLIOptions {
	if o.Path == "" {
		o.Path = "amd-smi"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 5 * time.Second
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	return o
}

// The amd-smi command lines, each with a fallback without the section
// flags: some flags (--energy, --partition) exist only on bare-metal Linux,
// and `list -e` only from ROCm 6.4; the plain command prints every section
// the platform supports.
var (
	staticArgs  = [][]string{{"static", "--asic", "--bus", "--board", "--vram", "--partition", "--json"}, {"static", "--json"}}
	listArgs    = [][]string{{"list", "-e", "--json"}, {"list", "--json"}}
	metricArgs  = [][]string{{"metric", "--usage", "--power", "--clock", "--temperature", "--mem-usage", "--energy", "--json"}, {"metric", "--json"}}
	processArgs = []string{"process", "--json"}
	// xgmiArgs reads the XGMI accumulators (amd-smi 6.1 and later; an
	// older tool rejects the subcommand).
	xgmiArgs = []string{"xgmi", "-m", "--json"}
)

// pass tracks which devices one cached answer has served.
type pass struct {
	taken  time.Time
	served []bool
	valid  bool
	err    error
}

// stale reports whether the device at pos needs a new answer: none yet,
// the device was already served from this one (a new sampling pass), or
// the answer is older than maxAge.
func (p *pass) stale(pos int, now time.Time, maxAge time.Duration) bool {
	return !p.valid || p.served[pos] || now.Sub(p.taken) > maxAge || now.Before(p.taken)
}

func (p *pass) start(now time.Time, err error) {
	p.taken, p.valid, p.err = now, true, err
	clear(p.served)
}

// CLIBackend reads GPUs by running the amd-smi tool. One sampling pass
// over all GPUs runs `amd-smi metric` once and `amd-smi process` once. It
// is not safe for concurrent use.
type CLIBackend struct {
	run     Runner
	opts    CLIOptions
	ctx     context.Context
	cancel  context.CancelFunc
	now     func() time.Time
	devices []gpu.Device
	pos     map[int]int // Index → position
	metric  []string    // the metric command line that works
	// xgmi: amd-smi xgmi -m gave XGMI counters for some GPU at open, so
	// every pass runs it after metric; false on GPUs without them (MI250X,
	// a single GPU) and tools without the subcommand: never run again.
	xgmi  bool
	check *checker

	metricPass pass
	readings   []gpu.Reading
	present    []bool

	procPass pass
	procs    [][]gpu.Process
	closed   bool
}

// OpenCLI enumerates the GPUs with `amd-smi static`, `amd-smi list` and
// one `amd-smi metric` (for the VRAM of each device and to find which
// device of a package reports its power). run runs the commands (ExecRunner
// for the real tool). The error wraps gpu.ErrUnavailable when amd-smi lists
// no GPU.
func OpenCLI(ctx context.Context, run Runner, opts CLIOptions) (*CLIBackend, error) {
	return openCLI(ctx, run, opts, time.Now)
}

// openCLI is OpenCLI with a clock (the time of each answer, for the XGMI
// rates).
func openCLI(ctx context.Context, run Runner, opts CLIOptions, now func() time.Time) (*CLIBackend, error) {
	if run == nil {
		return nil, errors.New("amd: OpenCLI: nil Runner")
	}
	opts = opts.withDefaults()
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &CLIBackend{run: run, opts: opts, ctx: bctx, cancel: cancel, now: now}
	if err := b.open(ctx); err != nil {
		cancel()
		return nil, err
	}
	return b, nil
}

func (b *CLIBackend) open(ctx context.Context) error {
	out, _, err := b.runFirst(ctx, staticArgs)
	if err != nil {
		return err
	}
	devs, err := parseStatic(out)
	if err != nil {
		return fmt.Errorf("amd: %w", err)
	}
	if len(devs) == 0 {
		return fmt.Errorf("amd: %s static lists no GPU: %w: %w", b.opts.Path, errNoDevices, gpu.ErrUnavailable)
	}
	slices.SortFunc(devs, func(a, c cliDevice) int { return a.gpu - c.gpu })

	// UUIDs and render nodes; enumeration works without them.
	if out, _, err := b.runFirst(ctx, listArgs); err == nil {
		if listed, err := parseList(out); err == nil {
			for i := range devs {
				l, ok := listed[devs[i].gpu]
				if !ok {
					continue
				}
				devs[i].uuid, devs[i].render = l.uuid, l.render
				if devs[i].info.bdf == "" {
					devs[i].info.bdf = l.bdf
				}
			}
		}
	}

	out, args, err := b.runFirst(ctx, metricArgs)
	if err != nil {
		return err
	}
	b.metric = args
	raw, err := parseMetric(out)
	if err != nil {
		return fmt.Errorf("amd: %w", err)
	}

	infos := make([]devInfo, len(devs))
	b.pos = make(map[int]int, len(devs))
	first := make([]gpu.Reading, len(devs))
	for i, d := range devs {
		infos[i] = d.info
		b.pos[d.gpu] = i
		dev := gpu.Device{
			Index:            d.gpu,
			Minor:            d.render,
			UUID:             d.uuid,
			Model:            d.info.model,
			Vendor:           gpu.VendorAMD,
			Parent:           -1,
			Partition:        partitionOf(d.info),
			PCIBusID:         d.info.bdf,
			MemoryTotalBytes: d.vramBytes,
		}
		if dev.Minor < 0 && sysfsMinorApplies(dev.Partition, dev.PCIBusID) {
			dev.Minor = renderMinor(b.opts.SysRoot, dev.PCIBusID)
		}
		first[i].Reset()
		if r, ok := raw[d.gpu]; ok {
			first[i] = r
			sanitize(&first[i])
			if first[i].Has(gpu.FieldMemoryTotal) {
				// The driver's per-device VRAM (a compute partition's
				// share), rather than the board's VRAM size.
				dev.MemoryTotalBytes = first[i].MemoryTotalBytes
			}
		}
		b.devices = append(b.devices, dev)
	}
	b.check = newChecker(infos)
	b.check.prime(first)
	if out, err := b.command(ctx, xgmiArgs); err == nil {
		if counters, err := parseXGMI(out); err == nil {
			now := b.now()
			for pos, d := range b.devices {
				var ignored gpu.Reading
				x := counters[d.Index]
				b.xgmi = b.xgmi || x.ok
				b.check.setLinkRates(pos, x, now, &ignored) // the reference for the first pass
			}
		}
	}
	n := len(devs)
	b.metricPass.served, b.procPass.served = make([]bool, n), make([]bool, n)
	b.readings, b.present, b.procs = make([]gpu.Reading, n), make([]bool, n), make([][]gpu.Process, n)
	return nil
}

// runFirst runs the first command line of alternatives that succeeds and
// returns its output and arguments.
func (b *CLIBackend) runFirst(ctx context.Context, alternatives [][]string) ([]byte, []string, error) {
	var errs []error
	for _, args := range alternatives {
		out, err := b.command(ctx, args)
		if err == nil {
			return out, args, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, errors.Join(errs...)
}

// command runs amd-smi with args under the timeout.
func (b *CLIBackend) command(ctx context.Context, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	out, err := b.run(ctx, b.opts.Path, args...)
	if err != nil {
		what := b.opts.Path + " " + strings.Join(args, " ")
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("amd: %s: timed out after %s: %w", what, b.opts.Timeout, err)
		}
		return nil, fmt.Errorf("amd: %s: %w", what, err)
	}
	return out, nil
}

// Name returns "amd-smi-cli".
func (b *CLIBackend) Name() string { return NameCLI }

// Devices lists the devices enumerated at open, in amd-smi's order.
func (b *CLIBackend) Devices() []gpu.Device { return b.devices }

func (b *CLIBackend) position(index int) (int, error) {
	if b.closed {
		return 0, errors.New("amd: amd-smi backend is closed")
	}
	pos, ok := b.pos[index]
	if !ok {
		return 0, fmt.Errorf("amd: no GPU with index %d", index)
	}
	return pos, nil
}

// Read fills r for the device with the given index from the sampling
// pass's `amd-smi metric` answer, fetched when this pass has not fetched
// it yet.
func (b *CLIBackend) Read(index int, r *gpu.Reading) error {
	pos, err := b.position(index)
	if err != nil {
		return err
	}
	if now := b.now(); b.metricPass.stale(pos, now, b.opts.MaxAge) {
		b.metricPass.start(now, b.refreshMetric())
	}
	b.metricPass.served[pos] = true
	if b.metricPass.err != nil {
		return b.metricPass.err
	}
	if !b.present[pos] {
		return fmt.Errorf("amd: %s metric has no entry for GPU %d", b.opts.Path, index)
	}
	*r = b.readings[pos]
	return nil
}

// refreshMetric runs amd-smi metric once for all devices and applies the
// consistency checks to the whole answer, in enumeration order.
func (b *CLIBackend) refreshMetric() error {
	out, err := b.command(b.ctx, b.metric)
	if err != nil {
		return err
	}
	raw, err := parseMetric(out)
	if err != nil {
		return fmt.Errorf("amd: %w", err)
	}
	links, now := b.refreshXGMI()
	for pos, d := range b.devices {
		r, ok := raw[d.Index]
		b.present[pos] = ok
		if !ok {
			b.readings[pos].Reset()
			continue
		}
		b.check.setLinkRates(pos, links[d.Index], now, &r)
		b.check.apply(pos, &r)
		b.readings[pos] = r
	}
	return nil
}

// refreshXGMI runs amd-smi xgmi -m once for all devices, when it gave
// counters at open, and returns them with the time they were read. A
// failing command or malformed output leaves the links missing for this
// pass (not an error: the rest of the reading stands).
func (b *CLIBackend) refreshXGMI() (map[int]xgmiCounters, time.Time) {
	if !b.xgmi {
		return nil, time.Time{}
	}
	out, err := b.command(b.ctx, xgmiArgs)
	if err != nil {
		return nil, time.Time{}
	}
	counters, err := parseXGMI(out)
	if err != nil {
		return nil, time.Time{}
	}
	return counters, b.now()
}

// Processes appends the processes using the device, from the sampling
// pass's `amd-smi process` answer.
func (b *CLIBackend) Processes(index int, buf []gpu.Process) ([]gpu.Process, error) {
	pos, err := b.position(index)
	if err != nil {
		return buf, err
	}
	if now := b.now(); b.procPass.stale(pos, now, b.opts.MaxAge) {
		b.procPass.start(now, b.refreshProcesses())
	}
	b.procPass.served[pos] = true
	if b.procPass.err != nil {
		return buf, b.procPass.err
	}
	return append(buf, b.procs[pos]...), nil
}

func (b *CLIBackend) refreshProcesses() error {
	out, err := b.command(b.ctx, processArgs)
	if err != nil {
		return err
	}
	lists, err := parseProcesses(out)
	if err != nil {
		return fmt.Errorf("amd: %w", err)
	}
	for pos, d := range b.devices {
		b.procs[pos] = lists[d.Index]
	}
	return nil
}

// Close stops any amd-smi command still running; the backend cannot be
// used afterwards.
func (b *CLIBackend) Close() error {
	if !b.closed {
		b.closed = true
		b.cancel()
	}
	return nil
}

var _ gpu.Backend = (*CLIBackend)(nil)
