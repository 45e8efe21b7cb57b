// Package childproc runs a server under measurement in a process of its
// own, so that the load generator stays out of the CPU time and memory
// measured: the running executable, re-run with a subcommand, which prints
// one JSON line once it serves and stops when its stdin closes.
package childproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// stopTimeout bounds how long a process may take to exit once told to.
const stopTimeout = 10 * time.Second

// Process is a running child process.
type Process struct {
	what   string // e.g. "server process", for errors
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *bytes.Buffer
}

// Start runs this executable with args and env added to its environment,
// and waits up to timeout for the first line it prints, decoded into ready;
// valid says whether it serves. what names the process in errors.
func Start(ctx context.Context, what string, args, env []string, timeout time.Duration, ready any, valid func() bool) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to run the %s: %w", what, err)
	}
	p := &Process{what: what, cmd: exec.Command(exe, args...), stderr: &bytes.Buffer{}}
	p.cmd.Env, p.cmd.Stderr = append(os.Environ(), env...), p.stderr
	out, err := p.cmd.StdoutPipe()
	if err == nil {
		p.stdin, err = p.cmd.StdinPipe()
	}
	if err == nil {
		err = p.cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("starting the %s: %w", what, err)
	}
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(out).ReadBytes('\n')
		line <- b
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case b := <-line:
		if json.Unmarshal(b, ready) == nil && valid() {
			return p, nil
		}
		p.kill()
		return nil, fmt.Errorf("%s did not start: %s", what, strings.TrimSpace(p.stderr.String()))
	case <-time.After(timeout):
		p.kill()
		return nil, fmt.Errorf("%s did not start serving within %v", what, timeout)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// Serving is the child's side of Start: it prints ready as the JSON line
// Start waits for, then calls stop once stdin is closed.
func Serving(ready any, stdin io.Reader, stdout io.Writer, stop func()) error {
	line, _ := json.Marshal(ready)
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		stop()
	}()
	return nil
}

// CPU is the process's user and system CPU time so far.
func (p *Process) CPU() time.Duration { return sysinfo.CPUTime(p.cmd.Process.Pid) }

// PeakRSS is the process's VmHWM since it started.
func (p *Process) PeakRSS() int64 { return sysinfo.PeakRSS(p.cmd.Process.Pid) }

// Stop closes the process's stdin, which makes it shut down, and waits for
// it; one that does not exit in time is killed.
func (p *Process) Stop() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w: %s", p.what, err, strings.TrimSpace(p.stderr.String()))
		}
		return nil
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within %v and was killed", p.what, stopTimeout)
	}
}

func (p *Process) kill() {
	p.stdin.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}
