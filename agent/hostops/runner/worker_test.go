package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeguard/pipeguard/internal/testing/hostile"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(fakeChildEnv) == "1":
		time.Sleep(time.Hour)
		os.Exit(0)
	case os.Getenv(fakeWorkerEnv) == "1":
		os.Exit(fakeWorkerMain())
	}
	os.Exit(m.Run())
}

// fakeArgs are the constant arguments the fake workers are started with.
var fakeArgs = []string{"-fake-powershell-worker", "constant"}

// fakePool is a pool of fake workers with its log and metrics.
type fakePool struct {
	*Workers
	log string // the directory of the fake workers' logs
	reg *prometheus.Registry
}

func newFakePool(t *testing.T, size int, tune ...func(*WorkerOptions)) *fakePool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := t.TempDir()
	reg := prometheus.NewRegistry()
	o := WorkerOptions{Program: exe, Args: fakeArgs, Size: size, Registerer: reg, Setting: "--powershell-workers",
		Env: []string{fakeWorkerEnv + "=1", fakeWorkerLogEnv + "=" + log}}
	for _, f := range tune {
		f(&o)
	}
	w, err := NewWorkers(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return &fakePool{Workers: w, log: log, reg: reg}
}

// run runs script as operation op, as runner.Script hands it to a runner.
func (f *fakePool) run(ctx context.Context, op, script string, env ...string) ([]byte, error) {
	cmd := PowerShell(script, env...)
	cmd.Op = op
	return f.Run(ctx, cmd)
}

// entries reads the fake workers' logs, the entries of kind only, in the
// order they were made.
func (f *fakePool) entries(t *testing.T, kind string) []fakeEntry {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(f.log, "worker-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []fakeEntry
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// A worker may be writing its log as it is read: only whole
		// lines count.
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i]
		} else {
			data = nil
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var e fakeEntry
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("fake worker log line %q: %v", line, err)
			}
			if e.Kind == kind {
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func (f *fakePool) starts() int { return int(testutil.ToFloat64(f.metrics.starts)) }

func (f *fakePool) restarts(why failure) int {
	return int(testutil.ToFloat64(f.metrics.restarts.WithLabelValues(string(why))))
}

// mustRun runs a script that must succeed with want.
func (f *fakePool) mustRun(t *testing.T, op, script, want string) {
	t.Helper()
	out, err := f.run(context.Background(), op, script)
	if err != nil || string(out) != want {
		t.Fatalf("%s: got %q, %v; want %q", script, out, err, want)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWorkersValuesTravelOnlyAsData(t *testing.T) {
	f := newFakePool(t, 1)
	var env, want []string
	for i, h := range append(hostile.CommandLine(), "héllo wörld ✓ 𝄞", "") {
		name := fmt.Sprintf("v%02d", i)
		env = append(env, Env(name, h))
		want = append(want, name+"="+h)
	}
	sort.Strings(want)
	out, err := f.run(context.Background(), "Get-Disk", "echo-env", env...)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != strings.Join(want, "\n") {
		t.Fatalf("the script saw\n%q\nwant the values verbatim\n%q", got, strings.Join(want, "\n"))
	}
	starts := f.entries(t, "start")
	if len(starts) != 1 {
		t.Fatalf("%d worker starts, want 1", len(starts))
	}
	if !slices.Equal(starts[0].Args, fakeArgs) {
		t.Errorf("worker arguments %q, want exactly the constant %q", starts[0].Args, fakeArgs)
	}
	for _, h := range hostile.CommandLine() {
		for _, a := range starts[0].Args {
			if strings.Contains(a, h) {
				t.Errorf("argument %q carries the request value %q", a, h)
			}
		}
		for _, e := range starts[0].Environ {
			if strings.Contains(e, h) {
				t.Errorf("the worker's environment entry %q carries the request value %q", e, h)
			}
		}
	}
	runs := f.entries(t, "run")
	if len(runs) != 1 || runs[0].Script != "echo-env" || runs[0].Env["v00"] != hostile.CommandLine()[0] {
		t.Fatalf("runs %+v, want one of echo-env with the values as data", runs)
	}
}

func TestWorkersOneStartForManySequentialRequests(t *testing.T) {
	f := newFakePool(t, 2)
	for i := range 20 {
		f.mustRun(t, "Get-Disk", fmt.Sprintf("answer:%d", i%3), fmt.Sprint(i%3))
	}
	if n := len(f.entries(t, "start")); n != 1 || f.starts() != 1 {
		t.Fatalf("%d starts logged, %d counted; want one worker for sequential requests", n, f.starts())
	}
	if n := len(f.entries(t, "run")); n != 20 {
		t.Fatalf("%d runs, want 20", n)
	}
}

func TestWorkersRegisterEachScriptOncePerProcess(t *testing.T) {
	f := newFakePool(t, 1)
	for range 3 {
		f.mustRun(t, "a", "answer:A", "A")
		f.mustRun(t, "b", "answer:B", "B")
	}
	if _, err := f.run(context.Background(), "Format-Volume", "crash"); err == nil {
		t.Fatal("crash answered")
	}
	f.mustRun(t, "a", "answer:A", "A") // a new process: registers again
	regs := f.entries(t, "register")
	starts := f.entries(t, "start")
	if len(starts) != 2 {
		t.Fatalf("%d starts, want 2", len(starts))
	}
	byPID := map[int][]string{}
	names := map[string]string{}
	for _, r := range regs {
		byPID[r.PID] = append(byPID[r.PID], r.Script)
		if prev, ok := names[r.Script]; ok && prev != r.Name {
			t.Errorf("script %q registered as %s and %s", r.Script, prev, r.Name)
		}
		names[r.Script] = r.Name
	}
	want := map[int][]string{
		starts[0].PID: {"answer:A", "answer:B", "crash"},
		starts[1].PID: {"answer:A"},
	}
	if fmt.Sprint(byPID) != fmt.Sprint(want) {
		t.Fatalf("registrations by process %v, want %v", byPID, want)
	}
}

func TestWorkersNeverRunMoreThanSizeAtOnce(t *testing.T) {
	const size, n = 3, 15
	f := newFakePool(t, size)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := f.run(context.Background(), "Format-Volume", "sleep:150ms")
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
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, r := range f.entries(t, "run") {
		edges = append(edges, edge{r.At, +1})
	}
	for _, e := range f.entries(t, "end") {
		edges = append(edges, edge{e.At, -1})
	}
	if len(edges) != 2*n {
		t.Fatalf("%d begin and end entries, want %d", len(edges), 2*n)
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a begin at the same instant
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	if most != size {
		t.Fatalf("at most %d requests ran at once, want exactly %d (the pool size)", most, size)
	}
	if f.starts() != size {
		t.Fatalf("%d starts, want %d", f.starts(), size)
	}
}

func TestWorkersMeasureByOperation(t *testing.T) {
	f := newFakePool(t, 1)
	f.mustRun(t, "Format-Volume", "answer:x", "x")
	f.mustRun(t, "Format-Volume", "answer:x", "x")
	f.mustRun(t, "Get-Disk", "answer:x", "x")
	if got := testutil.CollectAndCount(f.reg, "pipeguard_agent_powershell_request_duration_seconds"); got != 2 {
		t.Fatalf("%d duration series, want one per operation", got)
	}
	if got := testutil.CollectAndCount(f.reg, "pipeguard_agent_powershell_worker_restarts_total"); got != 3 {
		t.Fatalf("%d restart series, want deadline, exited and protocol", got)
	}
	if got := testutil.ToFloat64(f.metrics.starts); got != 1 {
		t.Fatalf("pipeguard_agent_powershell_worker_starts_total = %v", got)
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pipeguard_agent_powershell_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			op := m.GetLabel()[0].GetValue()
			want := map[string]uint64{"Format-Volume": 2, "Get-Disk": 1}[op]
			if m.GetHistogram().GetSampleCount() != want {
				t.Errorf("operation %s: %d samples, want %d", op, m.GetHistogram().GetSampleCount(), want)
			}
		}
	}
}

func TestNewWorkersDefaults(t *testing.T) {
	w, err := NewWorkers(WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.opts.Program != PowerShellProgram || !slices.Equal(w.opts.Args, WorkerArgs()) || w.Size() != DefaultWorkers || w.opts.MaxLine != DefaultWorkerMaxLine {
		t.Fatalf("defaults %+v", w.opts)
	}
	if _, err := NewWorkers(WorkerOptions{Size: -1}); err == nil || err.Error() != "PowerShell workers: size -1 is negative; give a positive number, or 0 for 2" {
		t.Fatalf("err = %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := NewWorkers(WorkerOptions{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorkers(WorkerOptions{Registerer: reg}); err == nil || !strings.HasPrefix(err.Error(), "registering the PowerShell worker metrics: ") {
		t.Fatalf("a second pool on one registry: %v", err)
	}
}
