package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// DefaultWorkers is how many PowerShell workers run at most.
const DefaultWorkers = 2

// ReservedWorkerGroups are the groups whose calls may take every worker
// one caller's share allows; the calls of the other groups (iscsi, smb,
// system) together hold at most DefaultCallerShare(Size) workers, so that
// hung iSCSI or SMB cmdlets cannot keep a disk or volume call waiting.
var ReservedWorkerGroups = map[string]bool{"disk": true, "volume": true}

// ErrWorkersClosed answers the requests made after Workers.Close.
var ErrWorkersClosed = errors.New("the PowerShell workers are stopped: the agent is shutting down")

// WorkerOptions configure a pool of PowerShell workers.
type WorkerOptions struct {
	// Program is the worker executable; empty means PowerShellProgram.
	Program string
	// Args are its arguments; nil means WorkerArgs(). They are constant:
	// no request value is ever part of them.
	Args []string
	// Env is added to the agent's environment for the worker processes;
	// request values never go here (they travel on standard input).
	Env []string
	// Size is how many workers run at most, each serving one request at a
	// time; 0 means DefaultWorkers.
	Size int
	// MaxLine bounds one answer line; 0 means DefaultWorkerMaxLine.
	MaxLine int
	// Log receives the workers' starts and restarts.
	Log logr.Logger
	// KillBackoff is how long a caller whose request ended mid-run (and so
	// killed its worker) waits before its next request gets a worker; it
	// doubles with each such request in a row, up to KillBackoffMax. 0
	// means DefaultKillBackoff and DefaultKillBackoffMax.
	KillBackoff, KillBackoffMax time.Duration
	// Registerer receives the metrics (pipeguard_agent_powershell_*); nil
	// means they are not registered.
	Registerer prometheus.Registerer
	// Setting names what sets Size, for the errors of a request that got
	// no worker, e.g. "--powershell-workers"; empty names nothing.
	Setting string
}

// Workers runs PowerShell Commands in a small pool of long-lived PowerShell
// processes instead of one process per command (Exec): PowerShell takes
// about 600 ms of CPU to start. Each worker starts on the first request that
// needs it, runs one request at a time, and learns each script once (see
// WorkerBootstrap for the protocol); a request waits for an idle worker
// within its context. The workers are shared between callers (CallerKey):
// one caller holds at most DefaultCallerShare(Size) of them, and so do the
// calls of the groups other than ReservedWorkerGroups together. A request
// whose context has ended is never sent, and a caller whose requests keep
// ending mid-run waits a backoff before its next one (KillBackoff).
//
// A request whose context ends before its answer kills its worker (on
// Windows with every process the worker started, through a Job object) and
// fails with an error wrapping the context's; a worker that exits or writes
// anything but its answer fails that request alone. Either way the next
// request starts a new worker. A request is never retried: a mutating
// cmdlet must not run twice.
type Workers struct {
	opts    WorkerOptions
	slots   *limits.Slots // one per request in a worker; Size of them
	metrics *workerMetrics
	backoff *killBackoff
	// testBackoffWait, when set, is called as a request starts its wait
	// for the restart backoff.
	testBackoffWait func()

	mu     sync.Mutex
	idle   []*workerProc     // running and free; the last used is reused first
	names  map[string]string // script text → name given to the workers
	live   map[*workerProc]struct{}
	closed bool
}

var _ Runner = (*Workers)(nil)

// NewWorkers returns a pool; no process starts until the first request.
func NewWorkers(o WorkerOptions) (*Workers, error) {
	if o.Program == "" {
		o.Program = PowerShellProgram
	}
	if o.Args == nil {
		o.Args = WorkerArgs()
	}
	if o.Size < 0 {
		return nil, fmt.Errorf("PowerShell workers: size %d is negative; give a positive number, or 0 for %d", o.Size, DefaultWorkers)
	}
	if o.Size == 0 {
		o.Size = DefaultWorkers
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultWorkerMaxLine
	}
	m, err := newWorkerMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	if o.KillBackoff <= 0 {
		o.KillBackoff = DefaultKillBackoff
	}
	if o.KillBackoffMax <= 0 {
		o.KillBackoffMax = DefaultKillBackoffMax
	}
	o.KillBackoffMax = max(o.KillBackoffMax, o.KillBackoff)
	return &Workers{opts: o, slots: limits.NewSlots(o.Size, limits.DefaultCallerShare(o.Size), limits.DefaultCallerShare(o.Size)), metrics: m,
		backoff: newKillBackoff(o.KillBackoff, o.KillBackoffMax),
		names:   map[string]string{}, live: map[*workerProc]struct{}{}}, nil
}

// Size is how many workers run at most.
func (w *Workers) Size() int { return w.opts.Size }

// Run runs cmd.Script in an idle worker with cmd.Env as its values and
// returns its output as text. cmd.Program and cmd.Args are not used: the
// worker's own are constant. A script failure is a *ScriptError.
func (w *Workers) Run(ctx context.Context, cmd Command) ([]byte, error) {
	op := cmd.Op
	if op == "" {
		op = "a PowerShell script"
	}
	if cmd.Script == "" {
		return nil, fmt.Errorf("internal error: %s has no PowerShell script for the PowerShell workers (program %s); host operations must build their commands with runner.PowerShell", op, cmd.Program)
	}
	env, err := requestEnv(cmd.Env)
	if err != nil {
		return nil, fmt.Errorf("internal error: %s was not sent to a PowerShell worker: %w", op, err)
	}
	if env == nil {
		env = map[string]string{}
	}
	caller, group := limits.CallerKey(ctx), cmd.Group
	if err := w.waitBackoff(ctx, caller, op); err != nil {
		return nil, err
	}
	release, why := w.slots.Acquire(ctx, caller, !ReservedWorkerGroups[group] && group != "")
	if release == nil {
		return nil, w.noWorker(ctx, op, group, why)
	}
	defer release()
	p, err := w.take()
	if err != nil {
		return nil, err
	}
	name := w.scriptName(cmd.Script)
	start := time.Now()
	if p == nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s was not run: the request ended before a PowerShell worker started for it: %w", op, err)
		}
		if p, err = w.start(); err != nil {
			return nil, fmt.Errorf("%s was not run: %w", op, err)
		}
	}
	if err := ctx.Err(); err != nil {
		w.put(p)
		return nil, fmt.Errorf("%s was not run: the request ended before it was sent to a PowerShell worker: %w", op, err)
	}
	out, fail, err := p.do(ctx, op, name, cmd.Script, env)
	w.metrics.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if caller != "" {
		// Only a request its caller ended counts: one cut at the group's
		// own deadline cost its caller that deadline already.
		w.backoff.record(caller, fail == restartDeadline && context.Cause(ctx) != limits.ErrHostCallDeadline, time.Now())
	}
	if fail != "" {
		w.retire(p, fail, op)
	} else {
		w.put(p)
	}
	return out, err
}

// NoWorkerError is a request that got no PowerShell worker before its
// context ended; it was not run. It wraps the context's error, and its
// message names what was full.
type NoWorkerError struct{ err error }

func (e *NoWorkerError) Error() string { return e.err.Error() }

// Unwrap returns the context's error.
func (e *NoWorkerError) Unwrap() error { return errors.Unwrap(e.err) }

func noWorkerErrorf(format string, a ...any) error {
	return &NoWorkerError{err: fmt.Errorf(format, a...)}
}

// noWorker is the error of a request that got no worker before its
// context ended, naming what was full.
func (w *Workers) noWorker(ctx context.Context, op, group string, why limits.Exhausted) error {
	share := limits.DefaultCallerShare(w.opts.Size)
	setting := ""
	if w.opts.Setting != "" {
		setting = " (" + w.opts.Setting + ")"
	}
	switch why {
	case limits.ExhaustedCaller:
		return noWorkerErrorf("no PowerShell worker became free for %s before the request ended: this caller already had %d of the %d workers, its whole share%s: %w",
			op, share, w.opts.Size, setting, ctx.Err())
	case limits.ExhaustedClass:
		return noWorkerErrorf("no PowerShell worker became free for %s before the request ended: the %s group, with the others but disk and volume, already had %d of the %d workers, the rest being kept for disk and volume%s: %w",
			op, group, share, w.opts.Size, setting, ctx.Err())
	}
	if w.opts.Setting != "" {
		setting = "; " + w.opts.Setting
	}
	return noWorkerErrorf("no PowerShell worker became free for %s before the request ended (all %d were busy%s): %w", op, w.opts.Size, setting, ctx.Err())
}

// take returns the idle worker used last, or nil when none runs (the
// caller, which holds a slot, starts one). Workers that ended while idle
// are retired on the way, so that no request is sent to them.
func (w *Workers) take() (*workerProc, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrWorkersClosed
	}
	for n := len(w.idle); n > 0; n = len(w.idle) {
		p := w.idle[n-1]
		w.idle = w.idle[:n-1]
		select {
		case <-p.exited:
			delete(w.live, p)
			p.retire()
			w.metrics.restarts.WithLabelValues(string(restartExited)).Inc()
			w.opts.Log.Info("PowerShell worker ended while idle; the next request starts a new one", "pid", p.cmd.Process.Pid, "status", p.status())
		default:
			return p, nil
		}
	}
	return nil, nil
}

// put makes p idle again.
func (w *Workers) put(p *workerProc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.live[p]; ok {
		w.idle = append(w.idle, p)
	}
}

// scriptName is the name the workers know script by, given on first sight.
func (w *Workers) scriptName(script string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	name, ok := w.names[script]
	if !ok {
		name = "s" + strconv.Itoa(len(w.names)+1)
		w.names[script] = name
	}
	return name
}

// start starts a worker process and counts it.
func (w *Workers) start() (*workerProc, error) {
	p, err := startWorker(w.opts)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		p.close(0)
		return nil, ErrWorkersClosed
	}
	w.live[p] = struct{}{}
	w.mu.Unlock()
	w.metrics.starts.Inc()
	w.opts.Log.V(1).Info("PowerShell worker started", "pid", p.cmd.Process.Pid)
	return p, nil
}

// retire stops a worker a request left unusable and counts why.
func (w *Workers) retire(p *workerProc, why failure, op string) {
	p.retire()
	w.mu.Lock()
	delete(w.live, p)
	w.mu.Unlock()
	w.metrics.restarts.WithLabelValues(string(why)).Inc()
	w.opts.Log.Info("PowerShell worker stopped; the next request starts a new one", "pid", p.cmd.Process.Pid, "reason", string(why), "operation", op)
}

// Close stops every worker: each is asked to end (its input closes) and is
// killed, with the processes it started, if it has not ended within 2
// seconds. A request still running fails. Requests made afterwards fail with
// ErrWorkersClosed. Close waits until every worker has ended.
func (w *Workers) Close() error {
	w.mu.Lock()
	w.closed = true
	live := make([]*workerProc, 0, len(w.live))
	for p := range w.live {
		live = append(live, p)
	}
	clear(w.live)
	w.idle = nil
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range live {
		wg.Go(func() { p.close(workerCloseGrace) })
	}
	wg.Wait()
	return nil
}
