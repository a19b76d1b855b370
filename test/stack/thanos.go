package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvThanosBin names a prebuilt thanos binary, instead of the one
// scripts/build-thanos.sh caches.
const EnvThanosBin = "JOBSIGHT_THANOS_BIN"

// ThanosReplicaLabel is the external label that tells a receiver's copy of
// a series from another's; Thanos Query deduplicates on it.
const ThanosReplicaLabel = "receive_replica"

// ThanosBinary returns the path of a thanos binary: JOBSIGHT_THANOS_BIN
// when set, otherwise the one scripts/build-thanos.sh has cached. It never
// builds (a cold build takes minutes; CI runs the script ahead, a developer
// runs it once by hand): an error says the binary is absent.
func ThanosBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv(EnvThanosBin); bin != "" {
		if _, err := os.Stat(bin); err != nil { // #nosec G703 -- the developer's own binary, named in their environment
			return "", fmt.Errorf("%s: %w", EnvThanosBin, err)
		}
		return bin, nil
	}
	bin, err := RunBuildScript(ctx, "scripts/build-thanos.sh", "--cached")
	if err != nil {
		return "", fmt.Errorf("no thanos binary: run scripts/build-thanos.sh once, or set %s (%w)", EnvThanosBin, err)
	}
	return bin, nil
}

// ThanosOptions shapes the hashring StartThanosHashring starts.
type ThanosOptions struct {
	// Bin is the thanos binary; ThanosBinary's when empty.
	Bin string
	// Receivers is the number of receivers in the hashring (3 when 0),
	// ReplicationFactor how many of them hold each series (2 when 0).
	Receivers, ReplicationFactor int
	// TenantHeader is the header the receivers and the querier read the
	// tenant from (X-Scope-OrgID when empty; Thanos' own default is
	// THANOS-TENANT).
	TenantHeader string
	// EnforceTenancy makes the querier answer a request only with the
	// series of the tenant its TenantHeader names (Thanos Query
	// --query.enforce-tenancy): a client that does not send the header
	// sees the default tenant's series, none of its own.
	EnforceTenancy bool
	// OutOfOrderWindow lets each receiver take samples up to this much
	// older than a series' newest (--tsdb.out-of-order.time-window; 0:
	// Thanos' default, none). With replication factor 2 a write is
	// acknowledged once one replica stored it and the other copy is
	// forwarded on its own, so a later write can reach that replica first:
	// without a window it drops the older samples as out of order.
	OutOfOrderWindow time.Duration
}

// Receiver is one `thanos receive` of the hashring, router and ingestor in
// one: its Server's URL is its HTTP (status) address.
type Receiver struct {
	*Server
	// WriteURL is its remote-write endpoint (…/api/v1/receive).
	WriteURL string
	// GRPC is its gRPC address (Store API and replication), host:port.
	GRPC string
	// Replica is its ThanosReplicaLabel value.
	Replica string
}

// Thanos is a Thanos Receive hashring behind one Thanos Query.
type Thanos struct {
	Receivers []*Receiver
	// Query's URL is the Prometheus-compatible query API base
	// (URL + "/api/v1/query").
	Query        *Server
	TenantHeader string
}

// StartThanosHashring starts opts.Receivers `thanos receive` processes in
// one hashring (every receiver routes and ingests: a write to any of them
// lands on ReplicationFactor of them, chosen by the series' hash) and one
// `thanos query` reading all of them through their Store API and
// deduplicating the replicas (--query.replica-label=receive_replica, with
// the chain algorithm: --deduplication.func=chain), each on free ports of 127.0.0.1 with its state under dir. It returns once the
// querier sees every receiver. Stop stops them all.
//
// Thanos Receive acknowledges a write once a quorum of the series'
// replicas stored it: ReplicationFactor/2+1, but 1 for a factor of 2 (so
// one receiver of three may be down); a write that cannot reach its
// quorum is answered 5xx and must be resent.
func StartThanosHashring(ctx context.Context, dir string, opts ThanosOptions) (th *Thanos, err error) {
	if opts.Bin == "" {
		if opts.Bin, err = ThanosBinary(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Receivers == 0 {
		opts.Receivers = 3
	}
	if opts.ReplicationFactor == 0 {
		opts.ReplicationFactor = 2
	}
	if opts.ReplicationFactor > opts.Receivers {
		return nil, fmt.Errorf("replication factor %d is more than the %d receivers", opts.ReplicationFactor, opts.Receivers)
	}
	if opts.TenantHeader == "" {
		opts.TenantHeader = "X-Scope-OrgID"
	}
	th = &Thanos{TenantHeader: opts.TenantHeader}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, th.Logs(2000))
			_ = th.Stop()
			th = nil
		}
	}()

	type ports struct{ http, grpc, write, capnp int }
	ps := make([]ports, opts.Receivers)
	endpoints := make([]string, opts.Receivers)
	for i := range ps {
		for _, p := range []*int{&ps[i].http, &ps[i].grpc, &ps[i].write, &ps[i].capnp} {
			if *p, err = FreePort(); err != nil {
				return th, err
			}
		}
		endpoints[i] = "127.0.0.1:" + strconv.Itoa(ps[i].grpc)
	}
	hashring, _ := json.Marshal([]map[string]any{{"hashring": "default", "endpoints": endpoints}})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return th, fmt.Errorf("creating %s: %w", dir, err)
	}
	hashringFile := filepath.Join(dir, "hashring.json")
	if err := os.WriteFile(hashringFile, hashring, 0o644); err != nil {
		return th, fmt.Errorf("writing the hashring: %w", err)
	}

	for i, p := range ps {
		rdir := filepath.Join(dir, "receive-"+strconv.Itoa(i))
		replica := "r" + strconv.Itoa(i)
		args := []string{"receive",
			"--tsdb.path=" + filepath.Join(rdir, "data"),
			"--tsdb.retention=1d",
			"--http-address=127.0.0.1:" + strconv.Itoa(p.http),
			"--grpc-address=" + endpoints[i],
			"--remote-write.address=127.0.0.1:" + strconv.Itoa(p.write),
			"--receive.capnproto-address=127.0.0.1:" + strconv.Itoa(p.capnp),
			"--http-grace-period=0s", "--grpc-grace-period=0s",
			"--receive.hashrings-file=" + hashringFile,
			"--receive.local-endpoint=" + endpoints[i],
			"--receive.replication-factor=" + strconv.Itoa(opts.ReplicationFactor),
			"--receive.tenant-header=" + opts.TenantHeader,
			"--label=" + ThanosReplicaLabel + `="` + replica + `"`,
			"--log.level=warn",
		}
		if opts.OutOfOrderWindow > 0 {
			args = append(args, "--tsdb.out-of-order.time-window="+strconv.FormatInt(int64(opts.OutOfOrderWindow/time.Second), 10)+"s")
		}
		s, err := startProcess("thanos-receive", rdir, nil, opts.Bin, args...)
		if err != nil {
			return th, err
		}
		s.URL = "http://127.0.0.1:" + strconv.Itoa(p.http)
		th.Receivers = append(th.Receivers, &Receiver{Server: s, GRPC: endpoints[i], Replica: replica,
			WriteURL: "http://127.0.0.1:" + strconv.Itoa(p.write) + "/api/v1/receive"})
	}
	for _, r := range th.Receivers {
		if err := r.waitHTTP(ctx, r.URL+"/-/ready"); err != nil {
			return th, err
		}
	}

	qport, err := FreePort()
	if err != nil {
		return th, err
	}
	qgrpc, err := FreePort()
	if err != nil {
		return th, err
	}
	args := []string{"query",
		"--http-address=127.0.0.1:" + strconv.Itoa(qport),
		"--grpc-address=127.0.0.1:" + strconv.Itoa(qgrpc),
		"--http-grace-period=0s", "--grpc-grace-period=0s",
		"--query.replica-label=" + ThanosReplicaLabel,
		// Receive's replicas hold the same timestamps: chain merges them
		// sample for sample. The default (penalty, made for Prometheus HA
		// pairs scraping at different instants) skips the two samples after
		// a gap opens in the replica it reads (it seeks the other one
		// 2 × the interval ahead): CI run of 2026-11-29, 2 of 40 samples
		// missing from 2 series after receiver 2 came back.
		"--deduplication.func=chain",
		"--query.tenant-header=" + opts.TenantHeader,
		"--log.level=warn",
	}
	if opts.EnforceTenancy {
		args = append(args, "--query.enforce-tenancy")
	}
	for _, e := range endpoints {
		args = append(args, "--endpoint="+e)
	}
	q, err := startProcess("thanos-query", filepath.Join(dir, "query"), nil, opts.Bin, args...)
	if err != nil {
		return th, err
	}
	q.URL = "http://127.0.0.1:" + strconv.Itoa(qport)
	th.Query = q
	if err := q.waitHTTP(ctx, q.URL+"/-/ready"); err != nil {
		return th, err
	}
	if err := th.WaitStores(ctx, len(endpoints)); err != nil {
		return th, err
	}
	return th, nil
}

// WaitStores waits until the querier has n healthy receivers among its
// stores.
func (th *Thanos) WaitStores(ctx context.Context, n int) error {
	var last string
	for {
		got, err := th.healthyStores(ctx)
		if err == nil && got >= n {
			return nil
		}
		last = fmt.Sprintf("%d of %d receivers healthy (%v)", got, n, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("thanos query at %s: %s: %w (log %s)", th.Query.URL, last, ctx.Err(), th.Query.Log)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// healthyStores counts the querier's receive stores without an error
// (its /api/v1/stores).
func (th *Thanos) healthyStores(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.Query.URL+"/api/v1/stores", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var ans struct {
		Data map[string][]struct {
			Name      string  `json:"name"`
			LastError *string `json:"lastError"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return 0, fmt.Errorf("decoding /api/v1/stores: %w", err)
	}
	n := 0
	for _, st := range ans.Data["receive"] {
		if st.LastError == nil || *st.LastError == "" {
			n++
		}
	}
	return n, nil
}

// KillReceiver kills receiver i at once (SIGKILL, no shutdown: what a
// crashed node does); its data directory stays for RestartReceiver.
func (th *Thanos) KillReceiver(i int) error {
	r := th.Receivers[i]
	if r.cmd == nil || r.cmd.Process == nil || r.Exited() {
		return fmt.Errorf("receiver %d is not running", i)
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("receiver %d (pid %d) did not die of SIGKILL", i, r.cmd.Process.Pid)
	}
	_ = os.Remove(filepath.Join(r.Dir, r.Name+".pid"))
	return nil
}

// RestartReceiver starts receiver i again on its ports with its data, and
// waits until it is ready and the querier sees every receiver again.
func (th *Thanos) RestartReceiver(ctx context.Context, i int) error {
	r := th.Receivers[i]
	if err := r.Restart(ctx); err != nil {
		return err
	}
	if err := r.waitHTTP(ctx, r.URL+"/-/ready"); err != nil {
		return err
	}
	return th.WaitStores(ctx, len(th.Receivers))
}

// Stop stops the querier and every receiver.
func (th *Thanos) Stop() error {
	if th == nil {
		return nil
	}
	var errs []error
	if th.Query != nil {
		errs = append(errs, th.Query.Stop())
	}
	for _, r := range th.Receivers {
		errs = append(errs, r.Stop())
	}
	return errors.Join(errs...)
}

// Logs returns the last bytes of every process's log, for a failed test.
func (th *Thanos) Logs(bytes int) string {
	var b strings.Builder
	for _, r := range th.Receivers {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", r.Log, r.Replica, tail(r.Log, bytes))
	}
	if th.Query != nil {
		fmt.Fprintf(&b, "--- %s ---\n%s\n", th.Query.Log, tail(th.Query.Log, bytes))
	}
	return b.String()
}
