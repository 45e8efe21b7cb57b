package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Restart reasons, the label of pipeguard_agent_powershell_worker_restarts_total.
const (
	// restartDeadline: the request's context ended before the answer.
	restartDeadline failure = "deadline"
	// restartExited: the worker exited, or its pipes broke, mid-request.
	restartExited failure = "exited"
	// restartProtocol: the worker wrote a line that is not the answer, or
	// one over the size bound.
	restartProtocol failure = "protocol"
)

// Bounds of a worker's shutdown and of the report on a worker that exited.
const (
	// workerExitWait is how long a request whose worker closed its output
	// waits for the process to end, for its exit status.
	workerExitWait = 5 * time.Second
	// workerStderrWait is how long it then waits for the rest of stderr.
	workerStderrWait = time.Second
	// workerCloseGrace is how long Close lets a worker end by itself after
	// its input closed, before killing it.
	workerCloseGrace = 2 * time.Second
	// workerStderrTail is how much of a worker's stderr is kept for errors.
	workerStderrTail = 4 << 10
)

// workerProc is one running worker process. One request at a time uses it.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	job   *workerJob // nil off Windows

	lines      chan lineResult // answers, from the stdout reader
	stderr     *tailBuffer
	stderrDone chan struct{}
	exited     chan struct{} // closed when Wait returned; waitErr set
	waitErr    error
	retired    chan struct{} // closed when the pool is done with the worker

	killOnce   sync.Once
	retireOnce sync.Once
	registered map[string]bool // script names this process knows
	nextID     uint64
	maxLine    int
}

type lineResult struct {
	line []byte
	err  error
}

// startWorker starts one worker process with the pool's program and
// arguments. Its pipes are the process's own (os.Pipe), so that Wait never
// waits for a reader: the pool reads them on goroutines of its own.
func startWorker(o WorkerOptions) (*workerProc, error) {
	var ends []*os.File // every end of the pipes, until Start has run
	closeAll := func() {
		for _, f := range ends {
			_ = f.Close()
		}
	}
	newPipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			ends = append(ends, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := newPipe()
	outR, outW, err2 := newPipe()
	errR, errW, err3 := newPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("creating the pipes of a PowerShell worker: %w", err)
	}
	cmd := exec.Command(o.Program, o.Args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("starting PowerShell worker %s: %w", o.Program, err)
	}
	// The child has its ends; the agent keeps only its own, so that the
	// pipes break when the child ends.
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	// The job is in place before the first request is written, and the
	// worker runs no script before it reads one, so every process a script
	// starts is in it.
	job, err := attachJob(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, _, _ = inW.Close(), outR.Close(), errR.Close()
		return nil, fmt.Errorf("PowerShell worker %s (pid %d) was stopped: %w", o.Program, cmd.Process.Pid, err)
	}
	p := &workerProc{
		cmd: cmd, stdin: inW,
		lines: make(chan lineResult), stderr: &tailBuffer{max: workerStderrTail},
		stderrDone: make(chan struct{}), exited: make(chan struct{}), retired: make(chan struct{}),
		registered: map[string]bool{}, maxLine: o.MaxLine, job: job,
	}
	go func() {
		p.waitErr = cmd.Wait()
		p.job.close() // kills what the worker left running
		close(p.exited)
	}()
	go p.readAnswers(outR, o.MaxLine)
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		_, _ = io.Copy(p.stderr, errR)
	}()
	return p, nil
}

// readAnswers passes every line of the worker's stdout to lines, until the
// first error (the end of the output, or a line over max) or until the
// pool is done with the worker. A line written while no request waits is
// handed to the next request, which finds it is not its answer.
func (p *workerProc) readAnswers(out *os.File, max int) {
	defer out.Close()
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := readLine(r, max)
		select {
		case p.lines <- lineResult{line, err}:
		case <-p.retired:
			return
		}
		if err != nil {
			return
		}
	}
}

// kill ends the worker and every process in its job.
func (p *workerProc) kill() {
	p.killOnce.Do(func() {
		p.job.kill()
		_ = p.cmd.Process.Kill()
		_ = p.stdin.Close()
	})
}

// retire kills the worker, for good: the pool no longer uses it.
func (p *workerProc) retire() {
	p.retireOnce.Do(func() { close(p.retired) }) // first: a request sees why
	p.kill()
}

// close asks the worker to end by closing its input, kills it when it has
// not ended within grace, and retires it.
func (p *workerProc) close(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.retire()
	<-p.exited
}

// failure is why a request left its worker unusable; "" keeps the worker.
type failure string

// do runs one request: registers the script with the process when it does
// not know it yet, sends the values, and waits for the answer within ctx.
// Unless the returned failure is empty, the worker is dead or stopped and
// must not be used again.
func (p *workerProc) do(ctx context.Context, op, name, script string, env map[string]string) ([]byte, failure, error) {
	stop := context.AfterFunc(ctx, p.kill)
	out, fail, err := p.exchange(ctx, op, name, script, env)
	if !stop() && fail == "" {
		// The context ended as the answer came: the worker is being killed.
		fail = restartDeadline
	}
	return out, fail, err
}

func (p *workerProc) exchange(ctx context.Context, op, name, script string, env map[string]string) ([]byte, failure, error) {
	if !p.registered[name] {
		line, err := encodeLine(workerRegister{Register: name, Script: script})
		if err != nil {
			return nil, "", fmt.Errorf("internal error: encoding the script of %s for a PowerShell worker: %w", op, err)
		}
		if _, err := p.stdin.Write(line); err != nil {
			fail, err := p.broken(ctx, op, err)
			return nil, fail, err
		}
		p.registered[name] = true
	}
	p.nextID++
	id := p.nextID
	line, err := encodeLine(workerRequest{ID: id, Run: name, Env: env})
	if err != nil {
		return nil, "", fmt.Errorf("internal error: encoding the request of %s for a PowerShell worker: %w", op, err)
	}
	if _, err := p.stdin.Write(line); err != nil {
		fail, err := p.broken(ctx, op, err)
		return nil, fail, err
	}
	select {
	case <-p.retired: // only Close retires a worker a request is using
		return nil, restartExited, fmt.Errorf("%s was stopped before it answered: %w", op, ErrWorkersClosed)
	case <-ctx.Done():
		p.kill()
		return nil, restartDeadline, fmt.Errorf("PowerShell worker did not answer %s before the request ended; the worker was stopped: %w", op, ctx.Err())
	case r := <-p.lines:
		switch {
		case errors.Is(r.err, errLineTooLong):
			p.kill()
			return nil, restartProtocol, fmt.Errorf("PowerShell worker's answer to %s is longer than %d bytes; the worker was stopped and the next request starts a new one", op, p.maxLine)
		case r.err != nil:
			fail, err := p.broken(ctx, op, r.err)
			return nil, fail, err
		}
		a, err := decodeAnswer(r.line, id)
		if err != nil {
			p.kill()
			return nil, restartProtocol, fmt.Errorf("PowerShell worker answered %s with a line that is not its answer (%v): %q; the worker was stopped and the next request starts a new one",
				op, err, truncate(string(r.line), 200))
		}
		if !*a.OK {
			return nil, "", &ScriptError{Message: a.Error}
		}
		return []byte(a.Out), "", nil
	}
}

// broken reports a worker whose pipes failed mid-request: its deadline, when
// the context ended (the kill broke them), else its exit, with its status
// and the end of its stderr.
func (p *workerProc) broken(ctx context.Context, op string, cause error) (failure, error) {
	if err := ctx.Err(); err != nil {
		p.kill()
		return restartDeadline, fmt.Errorf("PowerShell worker did not answer %s before the request ended; the worker was stopped: %w", op, err)
	}
	select {
	case <-p.retired:
		return restartExited, fmt.Errorf("%s was stopped before it answered: %w", op, ErrWorkersClosed)
	default:
	}
	select {
	case <-p.exited:
	case <-time.After(workerExitWait):
		p.kill()
		<-p.exited
	}
	select {
	case <-p.stderrDone:
	case <-time.After(workerStderrWait):
	}
	msg := fmt.Sprintf("PowerShell worker exited during %s: %s", op, p.status())
	if tail := p.stderr.lastLines(10); tail != "" {
		msg += ": " + tail
	} else {
		msg += fmt.Sprintf(" (%v, no stderr)", cause)
	}
	return restartExited, errors.New(msg + "; the next request starts a new worker")
}

// status is how the worker ended, once exited is closed.
func (p *workerProc) status() string {
	switch {
	case p.waitErr != nil:
		return p.waitErr.Error()
	case p.cmd.ProcessState != nil:
		return p.cmd.ProcessState.String()
	}
	return "no exit status"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(b), nil
}

// lastLines returns at most n of the last non-empty lines kept, joined by
// " | ", with "..." first when earlier output was dropped.
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	text, dropped := string(t.buf), t.dropped
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines, dropped = lines[len(lines)-n:], true
	}
	s := strings.Join(lines, " | ")
	if dropped && s != "" {
		s = "... " + s
	}
	return s
}
