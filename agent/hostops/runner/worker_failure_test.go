package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

func TestWorkersHungRequestIsCutAtItsDeadline(t *testing.T) {
	f := newFakePool(t, 1)
	b := Bound(f, "disk", limits.Limits{Timeout: 300 * time.Millisecond, Setting: "--host-call-timeout-disk"})
	start := time.Now()
	_, err := Script(context.Background(), b, "Update-HostStorageCache", "hang")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %v", took)
	}
	var de *limits.DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a limits.DeadlineError", err)
	}
	if want := "disk Update-HostStorageCache did not finish within 300ms (host operation deadline; --host-call-timeout-disk)"; err.Error() != want {
		t.Fatalf("err = %q\nwant %q", err, want)
	}
	hung := f.entries(t, "start")[0].PID
	waitFor(t, "the hung worker to end", func() bool { return !processAlive(hung) })

	out, err := Script(context.Background(), b, "Update-HostStorageCache", "answer:ok")
	if err != nil || string(out) != "ok" {
		t.Fatalf("next request: %q, %v", out, err)
	}
	if n := len(f.entries(t, "start")); n != 2 || f.starts() != 2 || f.restarts(restartDeadline) != 1 {
		t.Fatalf("%d starts logged, %d counted, %d deadline restarts; want a new worker after the deadline", n, f.starts(), f.restarts(restartDeadline))
	}
}

func TestWorkersRequestDeadlineWrapsTheContextError(t *testing.T) {
	f := newFakePool(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := f.run(ctx, "Get-SmbGlobalMapping", "hang")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	want := "PowerShell worker did not answer Get-SmbGlobalMapping before the request ended; the worker was stopped: context deadline exceeded"
	if err.Error() != want {
		t.Fatalf("err = %q\nwant %q", err, want)
	}
}

func TestWorkersWaitForAFreeWorkerWithinTheContext(t *testing.T) {
	f := newFakePool(t, 1)
	busy := make(chan error, 1)
	go func() {
		_, err := f.run(context.Background(), "Format-Volume", "sleep:1500ms")
		busy <- err
	}()
	waitFor(t, "the first request to run", func() bool { return len(f.entries(t, "run")) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.run(ctx, "Get-Disk", "answer:x")
	want := "no PowerShell worker became free for Get-Disk before the request ended (all 1 were busy; --powershell-workers): context deadline exceeded"
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	if err := <-busy; err != nil {
		t.Fatalf("the running request: %v", err)
	}
	if f.starts() != 1 || len(f.entries(t, "run")) != 1 {
		t.Fatalf("%d starts, %d runs: the request that waited must not have run", f.starts(), len(f.entries(t, "run")))
	}
}

func TestWorkersCrashFailsOnlyThatRequest(t *testing.T) {
	f := newFakePool(t, 2)
	other := make(chan error, 1)
	go func() {
		out, err := f.run(context.Background(), "Get-Disk", "sleep:1s")
		if err == nil && string(out) != "slept" {
			err = fmt.Errorf("output %q", out)
		}
		other <- err
	}()
	waitFor(t, "the first request to run", func() bool { return len(f.entries(t, "run")) == 1 })
	_, err := f.run(context.Background(), "Format-Volume", "crash")
	want := "PowerShell worker exited during Format-Volume: exit status 3: starting | boom: the disk is gone; the next request starts a new worker"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	if err := <-other; err != nil {
		t.Fatalf("the request on the other worker failed too: %v", err)
	}
	f.mustRun(t, "Format-Volume", "answer:formatted", "formatted")
	f.mustRun(t, "Format-Volume", "answer:formatted", "formatted")
	// The worker that crashed is not used again: the later requests run on
	// the one that survived.
	starts := f.entries(t, "start")
	runs := f.entries(t, "run")
	if len(starts) != 2 || f.restarts(restartExited) != 1 || f.starts() != 2 {
		t.Fatalf("%d exited restarts, %d starts; want 1 and 2", f.restarts(restartExited), f.starts())
	}
	crashed := runs[1].PID
	for _, r := range runs[2:] {
		if r.PID == crashed {
			t.Fatalf("a request after the crash ran on the crashed worker %d", crashed)
		}
	}
}

func TestWorkersBadAnswersFailTheRequestClearly(t *testing.T) {
	cases := map[string]struct {
		script string
		want   string // prefix of the error
		why    failure
	}{
		"garbage":              {"garbage", `PowerShell worker answered Get-Disk with a line that is not its answer (it is not JSON: invalid character 'W' looking for beginning of value): "WARNING: not an answer"; the worker was stopped`, restartProtocol},
		"another request's id": {"wrong-id", `PowerShell worker answered Get-Disk with a line that is not its answer (it answers request 2, not 1): "{\"id\":2,\"ok\":true,\"out\":\"x\"}"`, restartProtocol},
		"over the bound":       {"huge:5000", "PowerShell worker's answer to Get-Disk is longer than 4096 bytes; the worker was stopped and the next request starts a new one", restartProtocol},
		"half an answer":       {"partial", "PowerShell worker exited during Get-Disk: exit status 0 (unexpected EOF, no stderr); the next request starts a new worker", restartExited},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakePool(t, 1, func(o *WorkerOptions) { o.MaxLine = 4096 })
			_, err := f.run(context.Background(), "Get-Disk", tc.script)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to start with %q", err, tc.want)
			}
			f.mustRun(t, "Get-Disk", "answer:fine", "fine")
			if f.restarts(tc.why) != 1 || f.starts() != 2 {
				t.Fatalf("%d %s restarts, %d starts; want 1 and 2", f.restarts(tc.why), tc.why, f.starts())
			}
		})
	}
}

func TestWorkersAnswerUpToTheBound(t *testing.T) {
	f := newFakePool(t, 1, func(o *WorkerOptions) { o.MaxLine = 4096 })
	// An answer line of exactly the bound is accepted.
	out := strings.Repeat("y", 4096-len(`{"id":1,"ok":true,"out":""}`))
	f.mustRun(t, "Get-Disk", "answer:"+out, out)
}

func TestWorkersScriptFailureKeepsTheWorker(t *testing.T) {
	f := newFakePool(t, 1)
	_, err := f.run(context.Background(), "Set-Disk", "fail:Disk 4242 is offline")
	var se *ScriptError
	if !errors.As(err, &se) || err.Error() != "Disk 4242 is offline" {
		t.Fatalf("err = %#v, want the script's message", err)
	}
	// Through Script, the operation is named first.
	_, err = Script(context.Background(), f.Workers, "Set-Disk", "fail:Disk 4242 is offline")
	if err == nil || err.Error() != "Set-Disk failed: Disk 4242 is offline" {
		t.Fatalf("err = %v", err)
	}
	f.mustRun(t, "Set-Disk", "answer:ok", "ok")
	if f.starts() != 1 {
		t.Fatalf("%d starts: a script failure must not replace the worker", f.starts())
	}
}

func TestWorkersRefuseCommandsTheyCannotSendSafely(t *testing.T) {
	f := newFakePool(t, 1)
	cases := map[string]struct {
		cmd  Command
		want string
	}{
		"no script": {Command{Program: "sh", Args: []string{"-c", "true"}},
			"internal error: Get-Disk has no PowerShell script for the PowerShell workers (program sh); host operations must build their commands with runner.PowerShell"},
		"entry without a name": {PowerShell("echo-env", "=x"),
			`internal error: Get-Disk was not sent to a PowerShell worker: environment entry "=x" does not start with a variable name and '=' (letters, digits and _, not starting with a digit)`},
		"name that is no variable": {PowerShell("echo-env", "a b=x"),
			`internal error: Get-Disk was not sent to a PowerShell worker: environment entry "a b=x" does not start with a variable name and '=' (letters, digits and _, not starting with a digit)`},
		"NUL in a value": {PowerShell("echo-env", "volumeid=a\x00b"),
			"internal error: Get-Disk was not sent to a PowerShell worker: the value of volumeid holds a NUL character, which no environment variable can carry"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := tc.cmd
			cmd.Op = "Get-Disk"
			_, err := f.Run(context.Background(), cmd)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
	if f.starts() != 0 {
		t.Fatalf("%d starts: a refused command must start nothing", f.starts())
	}
}

func TestWorkersCloseStopsEveryWorker(t *testing.T) {
	f := newFakePool(t, 2)
	f.mustRun(t, "Get-Disk", "answer:x", "x")
	hung := make(chan error, 1)
	go func() {
		_, err := f.run(context.Background(), "Format-Volume", "hang")
		hung <- err
	}()
	waitFor(t, "two workers", func() bool { return len(f.entries(t, "run")) == 2 })
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > workerCloseGrace+5*time.Second {
		t.Fatalf("Close took %v", took)
	}
	for _, s := range f.entries(t, "start") {
		if processAlive(s.PID) {
			t.Errorf("worker %d still runs after Close", s.PID)
		}
	}
	if err := <-hung; !errors.Is(err, ErrWorkersClosed) || err.Error() != "Format-Volume was stopped before it answered: the PowerShell workers are stopped: the agent is shutting down" {
		t.Fatalf("the request running at Close: %v", err)
	}
	if _, err := f.run(context.Background(), "Get-Disk", "answer:x"); !errors.Is(err, ErrWorkersClosed) {
		t.Fatalf("after Close: %v, want ErrWorkersClosed", err)
	}
}

func TestWorkersReplaceAWorkerThatEndedWhileIdle(t *testing.T) {
	f := newFakePool(t, 1)
	f.mustRun(t, "Get-Disk", "answer:x", "x")
	first := f.entries(t, "start")[0].PID
	killProcess(t, first)
	waitFor(t, "the idle worker to end", func() bool { return !processAlive(first) })
	time.Sleep(50 * time.Millisecond) // for Wait to see it
	f.mustRun(t, "Get-Disk", "answer:y", "y")
	if f.starts() != 2 || f.restarts(restartExited) != 1 {
		t.Fatalf("%d starts, %d exited restarts; want 2 and 1", f.starts(), f.restarts(restartExited))
	}
}
