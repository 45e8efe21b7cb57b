//go:build wine && linux

package wine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Scripts of cmdlet-only calls, as fragments of their text.
const (
	rescanScript = "Update-HostStorageCache"
	formatScript = "Format-Volume -FileSystem NTFS"
)

// formatCall formats a volume whose id ends in n.
func formatCall(n int) call {
	return call{"volume/v1", "FormatVolume", map[string]any{"volumeId": fmt.Sprintf(`\\?\Volume{7e57da7a-0b0e-4c0d-9e11-%012d}\`, n)}}
}

// waitForRequest polls the stand-in's log until a worker began a script
// holding fragment.
func waitForRequest(t *testing.T, a *agent, fragment string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		for _, r := range a.powershellRequests(t) {
			if strings.Contains(r.Script, fragment) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker began a script with %q within a minute", fragment)
		}
	}
}

// TestWorkerHungRequestIsCutAtItsDeadline rescans through a worker that
// never answers: the call answers DeadlineExceeded naming the operation and
// the flag at its deadline, and the next call succeeds on a new worker.
func TestWorkerHungRequestIsCutAtItsDeadline(t *testing.T) {
	p := need(t)
	a := startAgent(t, p, "--host-call-timeout-disk", "5s")
	a.answers(t, rescanScript, "<<hang>>")
	start := time.Now()
	r := calls(t, p, call{"disk/v1", "Rescan", nil})[0]
	took := time.Since(start)
	const want = "disk Update-HostStorageCache did not finish within 5s (host operation deadline; --host-call-timeout-disk)"
	if r.Code != "DeadlineExceeded" || !strings.Contains(r.Message, want) {
		t.Fatalf("hung Rescan: %s %q, want DeadlineExceeded with %q", r.Code, r.Message, want)
	}
	if took > 45*time.Second { // csiclient's own start under Wine included
		t.Fatalf("the hung call answered after %v", took)
	}
	a.answers(t)
	if r := calls(t, p, call{"disk/v1", "Rescan", nil})[0]; r.Code != "OK" {
		t.Fatalf("the next Rescan: %s %q", r.Code, r.Message)
	}
	starts := a.powershellStarts(t)
	if len(starts) != 2 {
		t.Fatalf("%d PowerShell starts, want 2: the hung worker stopped and a new one answered the next call", len(starts))
	}
	if reqs := a.powershellRequests(t); len(reqs) != 2 || reqs[1].PID != starts[1].PID {
		t.Fatalf("requests %+v: want the second on the second worker", reqs)
	}
}

// TestWorkerExitFailsOnlyItsRequest formats a volume through a worker that
// exits mid-request while another worker rescans: the format fails with the
// worker's exit status and stderr, the rescan succeeds, and the next format
// succeeds.
func TestWorkerExitFailsOnlyItsRequest(t *testing.T) {
	p := need(t)
	a := startAgent(t, p, "--powershell-workers", "2")
	a.answers(t, formatScript, "<<exit>>", rescanScript, "<<sleep:5s>>")
	type outcome struct {
		r   []result
		err error
	}
	rescan := make(chan outcome, 1)
	go func() {
		r, err := runCalls(p, call{"disk/v1", "Rescan", nil})
		rescan <- outcome{r, err}
	}()
	waitForRequest(t, a, rescanScript)
	r := calls(t, p, formatCall(1))[0]
	const want = "PowerShell worker exited during Format-Volume: exit status 3: powershell stand-in: exiting mid-request as the answers say; the next request starts a new worker"
	if r.Code != "Unknown" || !strings.Contains(r.Message, want) {
		t.Fatalf("FormatVolume on a worker that exits: %s %q, want Unknown with %q", r.Code, r.Message, want)
	}
	o := <-rescan
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.r[0].Code != "OK" {
		t.Fatalf("the Rescan on the other worker: %s %q, want OK", o.r[0].Code, o.r[0].Message)
	}
	a.answers(t)
	if r := calls(t, p, formatCall(1))[0]; r.Code != "OK" {
		t.Fatalf("the next FormatVolume: %s %q", r.Code, r.Message)
	}
	if n := len(a.powershellEntries(t, "run")); n != 3 {
		t.Fatalf("%d requests ran, want 3: a failed request is never retried", n)
	}
}

// TestWorkerFormatConcurrency formats 32 volumes from 8 drivers at once
// with more workers than format slots: never more than --format-concurrency
// Format-Volume scripts run at once, that many do, and all succeed.
func TestWorkerFormatConcurrency(t *testing.T) {
	p := need(t)
	const workers, formats, clients, each = 4, 2, 8, 4
	a := startAgent(t, p, "--powershell-workers", fmt.Sprint(workers), "--format-concurrency", fmt.Sprint(formats))
	a.answers(t, formatScript, "<<sleep:400ms>>")
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			var cs []call
			for i := range each {
				cs = append(cs, formatCall(c*each+i))
			}
			results, err := runCalls(p, cs...)
			for i, r := range results {
				if err == nil && r.Code != "OK" {
					err = fmt.Errorf("%s: %s %q", cs[i], r.Code, r.Message)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	type key struct {
		pid int
		id  uint64
	}
	begins := map[key]int64{}
	for _, r := range a.powershellRequests(t) {
		if strings.Contains(r.Script, formatScript) {
			begins[key{r.PID, r.ID}] = r.At
		}
	}
	if len(begins) != clients*each {
		t.Fatalf("%d Format-Volume scripts ran, want %d", len(begins), clients*each)
	}
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, e := range a.powershellEntries(t, "end") {
		if at, ok := begins[key{e.PID, e.ID}]; ok {
			edges = append(edges, edge{at, +1}, edge{e.At, -1})
		}
	}
	if len(edges) != 2*clients*each {
		t.Fatalf("%d Format-Volume scripts ended, want %d", len(edges)/2, clients*each)
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	if most != formats {
		t.Fatalf("at most %d Format-Volume scripts ran at once, want exactly --format-concurrency (%d)", most, formats)
	}
	if n := len(a.powershellStarts(t)); n > workers {
		t.Fatalf("PowerShell started %d times, over --powershell-workers (%d)", n, workers)
	}
}
