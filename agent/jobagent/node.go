package jobagent

// The node agent: one process per node watches every job there.
//
// The SPANK plugin launches `jobsight-agent start` at every job's start
// and `jobsight-agent stop` at every job's end. Each launch hands its
// request to the node's agent over a Unix socket, or, when none runs,
// becomes it: the node lock (an flock, released by the kernel when the
// process dies) makes exactly one process the agent however many launches
// race. The agent answers "ok" only once it has taken the request on, and
// "bye" once it has begun to exit, so a launch never hands a job to an
// agent that is going away: it retries, and becomes the next agent once
// the old one's lock is released. A new agent first resumes every job
// whose checkpoint an earlier agent left (a crash loses at most the
// samples between the last checkpoint and the restart, and the documents
// say so). Once no job is left it keeps delivering what waits in the
// spool, for up to spool.linger, and exits; a job that starts meanwhile is
// taken on as usual. Its exit, from closing the socket to releasing the
// lock, takes at most ExitBudget, so the next launch never waits out its
// JoinTimeout; and running out of descriptors never stops it taking
// requests (acceptLoop), since holding the lock it would lose them all. Launch and the socket's protocol come first below,
// then that process, nodeAgent, the host of its jobs' watches (watch.go).

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/agent/collector"
	"github.com/jobsight/jobsight/agent/monitor"
)

// Request is what a launch asks of the node agent.
type Request struct {
	// Op is "start" or "stop" (a job's launch), "status" (who is the
	// node agent) or "handover" (an upgrade: hand every job over to the
	// executable Exec names, which must be this agent's own path).
	Op    string `json:"op"`
	JobID uint64 `json:"job_id"`
	// Exec is the handover's successor: the path of the agent executable
	// the package just installed.
	Exec string `json:"exec,omitempty"`
	// resumed: the request is for a job an earlier agent left (its
	// checkpoint), never one read from the socket.
	resumed bool
	UID     uint32 `json:"uid,omitempty"`
	// GPUs is SLURM_JOB_GPUS as slurmd gave the prolog; GPUsGiven whether
	// it was set at all.
	GPUs      string `json:"gpus,omitempty"`
	GPUsGiven bool   `json:"gpus_given,omitempty"`
	// SLUID is SLURM_JOB_SLUID as slurmd gave the prolog (Slurm 26.05 on;
	// empty when unknown): the job's cgroup v2 directory is named by it
	// unless cgroup.conf sets CgroupJobIdPaths=yes.
	SLUID string `json:"sluid,omitempty"`
	// Nodes is SLURM_JOB_NODELIST as slurmd gave the prolog or epilog (a
	// hostlist expression; empty when unknown): the job's allocation,
	// which decides the node that assembles the job document even when
	// slurmctld does not answer, or answers for a completing job with
	// only the nodes still completing.
	Nodes string `json:"nodes,omitempty"`
}

// MaxNodesLen bounds a request's node list (a hostlist expression).
const MaxNodesLen = 4000

// maxRequestLine bounds a request on the node agent's socket: a valid one
// (GPUs up to 4096 bytes, nodes up to MaxNodesLen of hostlist characters,
// which JSON does not escape) fits with room to spare.
const maxRequestLine = 16 << 10

// hostlistChars are the characters a node list may hold: node names of
// letters, digits, "-", "_", "." and ":" and hostlist brackets and
// commas (the SPANK plugin passes no other).
func hostlistChars(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || strings.ContainsRune("-_.:,[]", r)) {
			return false
		}
	}
	return true
}

// Validate names what is wrong with a request.
func (r Request) Validate() error {
	switch r.Op {
	case "start", "stop":
	case "status", "handover":
		if r.JobID != 0 || r.GPUs != "" || r.Nodes != "" || r.SLUID != "" || (r.Op == "status" && r.Exec != "") {
			return fmt.Errorf("request: %s takes no job", r.Op)
		}
		if r.Op == "handover" && !filepath.IsAbs(r.Exec) {
			return fmt.Errorf("request: handover: exec %.200q is not an absolute path", r.Exec)
		}
		return nil
	default:
		return fmt.Errorf("request: op %q is not start, stop, status or handover", r.Op)
	}
	if r.Exec != "" {
		return fmt.Errorf("request: %s takes no exec", r.Op)
	}
	if r.JobID == 0 || r.JobID > 1<<32-1 {
		return fmt.Errorf("request: job_id %d is not a Slurm job id", r.JobID)
	}
	if len(r.GPUs) > 4096 {
		return errors.New("request: gpus is longer than 4096 bytes")
	}
	if len(r.Nodes) > MaxNodesLen {
		return fmt.Errorf("request: nodes is longer than %d bytes", MaxNodesLen)
	}
	if !hostlistChars(r.Nodes) {
		return fmt.Errorf("request: nodes %.80q holds a character that is not in a host list", r.Nodes)
	}
	if r.SLUID != "" && !collector.ValidSLUID(r.SLUID) {
		// It becomes a path below the cgroup root: only Slurm's printed
		// form is taken. At most 40 bytes of it are shown.
		return fmt.Errorf("request: sluid %.40q is not a SLUID (\"s\" and 13 characters of Crockford's base32)", r.SLUID)
	}
	return nil
}

// Replies of the node agent.
const (
	replyOK  = "ok"
	replyBye = "bye" // exiting: launch the next agent
)

// nodePaths are the node agent's files in state_dir: its lock, socket
// and pid, named by node so that several slurmd on one host keep apart.
type nodePaths struct{ lock, sock, pid string }

func nodeFiles(stateDir, node string) nodePaths {
	base := filepath.Join(stateDir, "agent@"+node)
	return nodePaths{lock: base + ".lock", sock: base + ".sock", pid: base + ".pid"}
}

// JoinTimeout bounds how long a launch tries to hand its request over or
// to become the node agent.
const JoinTimeout = 20 * time.Second

// ExitBudget bounds an exiting node agent's last delivery, from closing
// its socket to releasing the node lock, well inside JoinTimeout: a
// launch meanwhile waits for the lock, and a store that does not answer
// would otherwise hold it for its timeout per call (10 s each by
// default), longer than the launch waits.
const ExitBudget = 5 * time.Second

// Launch hands req to the node's agent, or becomes the node agent and
// serves req and every later request until the node has no job left. It
// returns joined true when another process took the request.
func (a *Agent) Launch(ctx context.Context, req Request) (joined bool, err error) {
	if err := req.Validate(); err != nil {
		return false, err
	}
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		return false, err
	}
	p := nodeFiles(a.Config.StateDir, a.Config.Node)
	deadline := time.Now().Add(JoinTimeout)
	wait := 10 * time.Millisecond
	for {
		reply, err := send(p.sock, req)
		if err == nil && reply == replyOK {
			return true, nil
		}
		release, ok, lerr := tryFlock(p.lock)
		if lerr != nil {
			return false, lerr
		}
		if ok {
			defer release()
			return false, newNodeAgent(a, p).serve(ctx, &req)
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("no node agent took the request within %s (last answer %q, %v)", JoinTimeout, reply, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// Resume becomes the node agent when none runs, and resumes every job an
// earlier agent left a checkpoint of: the second half of a handover (the
// agent that handed its jobs over execs the new executable with it), and
// a way to resume after a crash without waiting for the next job's
// launch. joined is true when another node agent runs (it resumed them).
func (a *Agent) Resume(ctx context.Context) (joined bool, err error) {
	if err := ensureStateDirs(a.Config.StateDir); err != nil {
		return false, err
	}
	p := nodeFiles(a.Config.StateDir, a.Config.Node)
	deadline := time.Now().Add(JoinTimeout)
	for {
		if _, err := AgentStatus(a.Config.StateDir, a.Config.Node); err == nil {
			return true, nil
		}
		release, ok, err := tryFlock(p.lock)
		if err != nil {
			return false, err
		}
		if ok {
			defer release()
			return false, newNodeAgent(a, p).serve(ctx, nil)
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("the node lock %s stayed held for %s and no agent answered on %s", p.lock, JoinTimeout, p.sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Status is what a node agent says of itself (Request op "status").
type Status struct {
	Version string
	PID     int
	// Since is when this process became the node agent (Unix
	// nanoseconds): an agent that execs its successor keeps its pid.
	Since int64
	Jobs  int
}

func (s Status) String() string {
	return fmt.Sprintf("ok version=%s pid=%d since=%d jobs=%d", s.Version, s.PID, s.Since, s.Jobs)
}

// AgentStatus asks node's agent who it is; an error when none answers.
func AgentStatus(stateDir, node string) (Status, error) {
	reply, err := send(nodeFiles(stateDir, node).sock, Request{Op: "status"})
	if err != nil {
		return Status{}, err
	}
	var st Status
	if _, err := fmt.Sscanf(reply, "ok version=%s pid=%d since=%d jobs=%d", &st.Version, &st.PID, &st.Since, &st.Jobs); err != nil {
		return Status{}, fmt.Errorf("node agent answered %q", reply)
	}
	return st, nil
}

// AskHandover asks node's agent to hand its jobs over to the executable
// exec: it checkpoints every job, delivers what it holds, releases the
// node and execs exec, which resumes them (Resume).
func AskHandover(stateDir, node, exec string) error {
	reply, err := send(nodeFiles(stateDir, node).sock, Request{Op: "handover", Exec: exec})
	if err != nil {
		return err
	}
	if reply != replyOK {
		return fmt.Errorf("node agent answered %q", reply)
	}
	return nil
}

// AgentNodes are the nodes with a node agent socket in stateDir (one per
// slurmd on the host).
func AgentNodes(stateDir string) []string {
	socks, _ := filepath.Glob(filepath.Join(stateDir, "agent@*.sock"))
	var nodes []string
	for _, s := range socks {
		nodes = append(nodes, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "agent@"), ".sock"))
	}
	return nodes
}

// ownExecutable is the path this process was started from, as the
// package installed it: a replaced file's old inode reads "(deleted)".
func ownExecutable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(p, " (deleted)")
}

// Handover hands req to the node's agent when one runs and takes it.
func Handover(stateDir, node string, req Request) bool {
	reply, err := send(nodeFiles(stateDir, node).sock, req)
	return err == nil && reply == replyOK
}

// send hands req to the agent listening on sock and returns its reply.
func send(sock string, req Request) (string, error) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// PidFilePath is the node agent's pid file: state_dir/agent@<node>.pid.
func PidFilePath(stateDir, node string) string { return nodeFiles(stateDir, node).pid }

// WritePidFile writes this process's pid to path, for logrotate
// (examples/logrotate.d/jobsight: pkill -HUP -L -F path -x jobsight-agent),
// and holds an exclusive flock on it until release is called: a pid file
// that a killed agent left is unlocked, so `pkill -L` signals nothing
// rather than whatever process has the pid now. The file is locked before
// it is renamed into place, so a pid file that exists is locked while its
// agent lives. The node agent removes it when it exits.
func WritePidFile(path string) (release func(), err error) {
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("locking pid file %s: %w", tmp, err)
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("writing pid file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("pid file %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// tryFlock takes an exclusive flock on path without waiting.
func tryFlock(path string) (release func(), ok bool, err error) {
	fd, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("opening lock: %w", err)
	}
	if err := unix.Flock(int(fd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fd.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { fd.Close() }, true, nil
}

// nodeAgent is the node agent: it holds the node lock (taken by Launch),
// takes jobs over its socket, watches each (a jobWatch, whose host it is)
// and exits once none is left. One timer (sched) samples every job and one
// sender (snd) delivers, in order, what they all produce.
type nodeAgent struct {
	a     *Agent
	paths nodePaths
	sched *monitor.Scheduler
	snd   *monitor.Sender
	ctx   context.Context // the process's: ends every watch (SIGTERM)

	mu      sync.Mutex
	jobs    map[uint64]context.CancelCauseFunc // watched or being finalized
	exiting bool
	// handingOver: a handover began (successor is set). Requests are
	// still taken until every watch has ended: a job that starts
	// meanwhile is checkpointed at once for the successor, and a stop
	// ends its job's watch as usual.
	handingOver bool
	changed     chan struct{} // a job came or went
	since       time.Time     // when it became the node agent
	// successor is the executable a handover asked for: once every job
	// is checkpointed the process execs it (Agent.Successor).
	successor  string
	handoverAt time.Time
	wg         sync.WaitGroup
}

func newNodeAgent(a *Agent, p nodePaths) *nodeAgent {
	return &nodeAgent{a: a, paths: p, jobs: map[uint64]context.CancelCauseFunc{}, changed: make(chan struct{}, 1), since: time.Now()}
}

// serve is the node agent's life: from the launch that became it (first;
// nil for Resume) until no job is left and the spool is delivered, or
// until it has handed every job over (Agent.Successor is set then).
func (n *nodeAgent) serve(ctx context.Context, first *Request) error {
	a := n.a
	started := a.now()
	_ = os.Remove(n.paths.sock)
	ln, err := net.Listen("unix", n.paths.sock)
	if err != nil {
		return fmt.Errorf("node agent socket: %w", err)
	}
	_ = os.Chmod(n.paths.sock, 0o600)
	if unlockPid, err := WritePidFile(n.paths.pid); err != nil {
		a.Log.Warn("node agent pid file not written: logrotate cannot tell this agent to reopen its log", "err", err)
	} else {
		defer unlockPid()
	}
	cleanOld(a.Config.StateDir)
	defer profileOnSignal(filepath.Join(a.Config.StateDir, "profiles"), a.Config.Node, a.Log)()

	n.snd = monitor.NewSender(a.Outputs, a.Health, a.Log)
	schedCtx, stopSched := context.WithCancel(context.Background())
	n.sched = monitor.NewScheduler(a.Config.Interval, a.Config.Prometheus.PushInterval, a.Config.FlushInterval, n.snd, a.Health,
		nodeLabels(a.Config.Cluster, a.Config.Node), a.Log, a.Now)
	schedDone := make(chan struct{})
	go func() { n.sched.Run(schedCtx); close(schedDone) }()

	n.ctx = ctx
	a.Log.Info("node agent started", "node", a.Config.Node, "pid", os.Getpid())
	if _, err := leaveSpawnerCgroup(ctx, a.Config.Node, a.Log); err != nil {
		a.Log.Warn("node agent stays in the cgroup it was started in: under cgroup v2 with systemd, slurmd cannot be restarted while it runs there",
			"err", err)
	}
	// The launch's own request first: a job reusing the id of a job left
	// here is started with its own request (its watch finishes the older
	// job's checkpoint), and a stop finalizes its job as lost.
	if first != nil {
		n.take(*first)
	}
	for _, r := range n.leftJobs() {
		if n.has(r.JobID) {
			continue
		}
		a.Log.Info("resuming a job an earlier agent watched", "job_id", r.JobID)
		n.take(r)
	}

	go n.acceptLoop(ln)

	n.waitIdle(ctx)
	ln.Close()
	_ = os.Remove(n.paths.sock)
	// From here until the lock is released, a launch finds no agent to
	// hand its job to and waits (JoinTimeout) to become the next one: the
	// last delivery gets ExitBudget, and what a store does not take in
	// that time (one that drops packets answers nothing for its whole
	// timeout, per call) stays in the spool for the next agent.
	exitCtx, cancel := context.WithTimeout(context.Background(), ExitBudget)
	defer cancel()
	n.wg.Wait() // requests accepted before "exiting" was set
	stopSched()
	<-schedDone
	n.snd.CloseBy(exitCtx)
	a.Outputs.Replay(exitCtx)
	if exitCtx.Err() != nil {
		a.Log.Warn("exit: stores did not answer within the exit budget; the next agent on the node delivers what waits in the spool",
			"budget", ExitBudget, "items", a.Outputs.Pending())
	}
	_ = os.Remove(n.paths.pid)
	a.logUsage(a.now().Sub(started), 0, 0, 0)
	if n.successor != "" && ctx.Err() == nil {
		a.Successor = n.successor
		a.Log.Info("jobs handed over; executing the new agent", "exec", n.successor, "handover_seconds", a.now().Sub(n.handoverAt).Seconds())
	}
	return nil
}

// waitIdle returns once no job is left and the spool is delivered, or
// spool.linger after the last job ended, or when ctx ends (SIGTERM: the
// jobs' watches end and their documents are written first).
func (n *nodeAgent) waitIdle(ctx context.Context) {
	a := n.a
	var lingerUntil time.Time
	wait := cmp.Or(a.LingerPoll, 5*time.Second)
	for {
		n.mu.Lock()
		busy := len(n.jobs)
		if busy == 0 {
			switch {
			case n.handingOver, ctx.Err() != nil, a.Outputs.Pending() == 0, a.Config.Spool.Linger <= 0,
				!lingerUntil.IsZero() && a.now().After(lingerUntil):
				n.exiting = true
			}
		}
		exiting := n.exiting
		n.mu.Unlock()
		if exiting {
			if p := a.Outputs.Pending(); p > 0 {
				a.Log.Warn("exiting with items still in the spool; the next agent on the node delivers them", "items", p)
			}
			return
		}
		if busy > 0 {
			lingerUntil, wait = time.Time{}, cmp.Or(a.LingerPoll, 5*time.Second)
			select {
			case <-n.changed:
			case <-ctx.Done():
				n.cancelAll()
				<-n.changed
			}
			continue
		}
		if lingerUntil.IsZero() {
			lingerUntil = a.now().Add(a.Config.Spool.Linger)
			a.Log.Info("no job left; delivering what waits in the spool before exiting", "items", a.Outputs.Pending(), "for_at_most", a.Config.Spool.Linger)
		}
		select {
		case <-n.changed:
			continue
		case <-ctx.Done():
			continue
		case <-time.After(wait):
		}
		a.Outputs.Replay(ctx)
		wait = min(2*wait, 30*time.Second)
	}
}

// acceptLoop takes connections until the listener is closed. A failed
// accept (most often: out of file descriptors, EMFILE) is counted, logged
// and retried after a back-off of 5 ms doubling to 1 s, never the end of
// the loop: the agent holds the node lock, so an agent that stopped
// accepting would lose every later job's start and end on the node.
func (n *nodeAgent) acceptLoop(ln net.Listener) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			backoff = 0
			go n.handle(c)
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
		n.a.Health.AcceptErrors.Inc()
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		if backoff == time.Second || backoff == 5*time.Millisecond {
			// Once when they begin, then at most once a second.
			n.a.Log.Warn("node agent socket: accept failed; retrying", "err", err, "retry_in", backoff)
		}
		time.Sleep(backoff)
	}
}

// handle answers one connection: one request, one reply.
func (n *nodeAgent) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if !trustedPeer(c) {
		n.a.Log.Warn("refusing a request from a process that is neither root nor the agent's user")
		return
	}
	line, err := bufio.NewReader(io.LimitReader(c, maxRequestLine)).ReadString('\n')
	if err != nil {
		return
	}
	var req Request
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	if err := req.Validate(); err != nil {
		fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	switch req.Op {
	case "status":
		n.mu.Lock()
		st := Status{Version: Version, PID: os.Getpid(), Since: n.since.UnixNano(), Jobs: len(n.jobs)}
		n.mu.Unlock()
		fmt.Fprintln(c, st)
		return
	case "handover":
		if err := n.handover(req.Exec); err != nil {
			n.a.Log.Warn("handover refused", "err", err)
			fmt.Fprintf(c, "error: %v\n", err)
			return
		}
		fmt.Fprintln(c, replyOK)
		return
	}
	if !n.take(req) {
		fmt.Fprintln(c, replyBye)
		return
	}
	fmt.Fprintln(c, replyOK)
}

// take starts serving req; false when the agent is exiting.
func (n *nodeAgent) take(req Request) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exiting {
		return false
	}
	if cancel, ok := n.jobs[req.JobID]; ok {
		if req.Op == "stop" {
			// The marker tells a watch still setting up (or resuming)
			// that the job has ended; cancel ends a running one.
			n.a.jobFiles(req.JobID).recordStop()
			cancel(nil)
		}
		return true // a second start for a watched job: nothing to do
	}
	n.a.Log.Debug("request taken", "op", req.Op, "job_id", req.JobID)
	jobCtx, cancel := context.WithCancelCause(n.ctx)
	if n.handingOver {
		cancel(monitor.ErrHandover) // set up, checkpointed, left to the successor
	}
	n.jobs[req.JobID] = cancel
	n.signal()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		w := newJobWatch(n.a, n, req)
		var err error
		if req.Op == "start" {
			err = w.start(jobCtx, req)
		} else {
			err = w.stop(jobCtx)
		}
		if err != nil {
			n.a.Log.Error(req.Op, "job_id", req.JobID, "err", err)
		}
		n.mu.Lock()
		delete(n.jobs, req.JobID)
		n.mu.Unlock()
		cancel(nil)
		n.signal()
	}()
	return true
}

func (n *nodeAgent) signal() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

func (n *nodeAgent) has(id uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.jobs[id]
	return ok
}

func (n *nodeAgent) cancelAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.jobs {
		c(nil)
	}
}

// handover begins an upgrade's handover to exec, which must be the path
// this agent runs from (the package replaced the file there): every watch
// ends with a last sample and a checkpoint and no final documents (a job
// already finalizing finishes first), requests are still taken meanwhile
// (a new job is checkpointed at once for the successor), and once no
// watch is left, serve returns and the process execs exec, which resumes
// them. A launch after that waits for the node lock and becomes, or hands
// its job to, the successor.
func (n *nodeAgent) handover(exec string) error {
	own := ownExecutable()
	if own == "" || filepath.Clean(exec) != own {
		return fmt.Errorf("handover to %.200q: this agent runs from %q; only an executable installed there takes over", exec, own)
	}
	if st, err := os.Stat(exec); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("handover to %q: not an executable file (%v)", exec, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exiting || n.handingOver || n.ctx.Err() != nil {
		return errors.New("the agent is exiting already")
	}
	n.handingOver, n.successor, n.handoverAt = true, exec, n.a.now()
	n.a.Log.Info("handing every job over to a new agent", "exec", exec, "jobs", len(n.jobs))
	for _, c := range n.jobs {
		c(monitor.ErrHandover)
	}
	n.signal()
	return nil
}

// The node agent as its jobs' watchHost: its one timer samples every job,
// and its process is every job's, so no job's cost is split out; it
// delivers the spool and logs its use when it exits.

func (n *nodeAgent) drive(ctx context.Context, mon *monitor.Monitor) monitor.StopReason {
	reason := n.sched.Watch(ctx, mon)
	n.snd.Flush() // the running node document lands before the final one
	return reason
}

func (n *nodeAgent) watching()                                     {}
func (n *nodeAgent) finalizing()                                   {}
func (n *nodeAgent) finished(context.Context, *Checkpoint, string) {}

// trustedPeer: only root and the agent's own user may hand it jobs.
func trustedPeer(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return cred.Uid == 0 || int(cred.Uid) == os.Getuid()
}

// leftJobs are the jobs of this node whose checkpoint an earlier agent
// left without finalizing them.
func (n *nodeAgent) leftJobs() []Request {
	a := n.a
	prefix := a.Config.Cluster + "_"
	suffix := "@" + a.Config.Node + ".checkpoint.json"
	paths, _ := filepath.Glob(filepath.Join(a.Config.StateDir, "jobs", "*"+suffix))
	var out []Request
	for _, p := range paths {
		name := filepath.Base(p)
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix), 10, 32)
		if err != nil || id == 0 {
			continue
		}
		ck, err := a.jobFiles(id).loadCheckpoint()
		if err != nil {
			a.Log.Warn("unreadable checkpoint left by an earlier agent", "path", p, "err", err)
			continue
		}
		out = append(out, Request{Op: "start", JobID: id, UID: uidOf(ck.Job), GPUs: ck.GPUs, GPUsGiven: ck.GPUsGiven, SLUID: ck.SLUID, Nodes: ck.Nodes, resumed: true})
	}
	return out
}

func nodeLabels(cluster, node string) []monitor.Label {
	return []monitor.Label{{Name: "cluster", Value: cluster}, {Name: "node", Value: node}}
}
