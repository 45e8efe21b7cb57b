//go:build wine && linux

package wine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// agent is pipeguard-agent.exe running under Wine.
type agent struct {
	p      *prefix
	cmd    *exec.Cmd
	dir    string // C:\pipeguard\<test>, holding its audit log and stand-in files
	log    *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// syncBuffer is a bytes.Buffer safe for a writer and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAgent runs the agent with its audit log and PowerShell stand-in files
// in a directory of the test's own, and waits until it listens.
func startAgent(t *testing.T, p *prefix, args ...string) *agent {
	t.Helper()
	return startAgentExe(t, p, p.exe("pipeguard-agent"), nil, args...)
}

// startAgentExe is startAgent for the program exe, with the environment
// entries env returns once the agent's directory exists (nil: none).
func startAgentExe(t *testing.T, p *prefix, exe string, env func(a *agent) []string, args ...string) *agent {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	a := &agent{p: p, dir: `C:\pipeguard\` + name, log: &syncBuffer{}, done: make(chan error, 1)}
	if err := os.MkdirAll(p.path(a.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	args = append([]string{
		`--kubelet-path`, `C:\var\lib\kubelet`,
		`--audit-log-path`, a.dir + `\audit.log`,
		`--metrics-bind-address`, `0`,
		`--shutdown-timeout`, `5s`,
	}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	cmd := p.command(ctx, exe, args...)
	a.cmd = cmd
	cmd.Env = append(cmd.Env,
		"PIPEGUARD_STANDIN_LOG="+a.dir+`\powershell.jsonl`,
		"PIPEGUARD_STANDIN_ANSWERS="+a.dir+`\answers.json`)
	if env != nil {
		cmd.Env = append(cmd.Env, env(a)...)
	}
	cmd.Stdout, cmd.Stderr = a.log, a.log
	// Stopping asks for a clean shutdown (Wine delivers SIGINT to the
	// program as a console Ctrl+C) and kills only if it is not done soon.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { a.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = a.stop(t) })
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(a.log.String(), `"listening"`) {
		select {
		case err := <-a.done:
			a.done <- err
			t.Fatalf("%s exited before listening: %v\n%s", filepath.Base(exe), err, a.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen within 2 minutes:\n%s", filepath.Base(exe), a.log.String())
		}
	}
	return a
}

// stop ends the agent and returns how it exited; its log is printed when
// the test failed.
func (a *agent) stop(t *testing.T) error {
	if a.cancel == nil {
		return nil
	}
	a.cancel()
	a.cancel = nil
	err := <-a.done
	if a.cmd.ProcessState != nil && a.cmd.ProcessState.Success() {
		err = nil // Wait reports the cancelled context even after a clean exit
	}
	if t.Failed() {
		t.Logf("pipeguard-agent.exe log:\n%s", a.log.String())
	}
	return err
}

// answers sets the PowerShell stand-in's answers: script fragment → output.
func (a *agent) answers(t *testing.T, pairs ...string) {
	t.Helper()
	type answer struct {
		Fragment string `json:"fragment"`
		Output   string `json:"output"`
	}
	var list []answer
	for i := 0; i+1 < len(pairs); i += 2 {
		list = append(list, answer{pairs[i], pairs[i+1]})
	}
	data, _ := json.Marshal(list)
	if err := os.WriteFile(a.p.path(a.dir+`\answers.json`), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// result is csiclient's answer to one call.
type result struct {
	Call     string          `json:"call"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
	Response json.RawMessage `json:"response"`
}

// call is one line of csiclient input.
type call struct {
	gv, method string
	request    map[string]any
}

func (c call) String() string {
	if c.request == nil {
		return c.gv + " " + c.method + " {}"
	}
	body, _ := json.Marshal(c.request)
	return c.gv + " " + c.method + " " + string(body)
}

// calls makes the calls with csiclient.exe, the unmodified CSI Proxy client
// library, in one process.
func calls(t *testing.T, p *prefix, cs ...call) []result {
	t.Helper()
	results, err := runCalls(p, cs...)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// runCalls is calls for goroutines other than the test's: it returns the
// failure instead of ending the test.
func runCalls(p *prefix, cs ...call) ([]result, error) {
	var in strings.Builder
	for _, c := range cs {
		in.WriteString(c.String() + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := p.command(ctx, p.exe("csiclient"))
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("csiclient.exe: %v\n%s", err, stderr.String())
	}
	var results []result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("csiclient.exe output %q: %v", sc.Text(), err)
		}
		results = append(results, r)
	}
	if len(results) != len(cs) {
		return nil, fmt.Errorf("csiclient.exe answered %d of %d calls:\n%s\n%s", len(results), len(cs), out, stderr.String())
	}
	return results, nil
}

// record is the part of an audit record the tests read.
type record struct {
	AuditID     string                              `json:"auditID"`
	Stage       string                              `json:"stage"`
	RequestURI  string                              `json:"requestURI"`
	User        struct{ Extra map[string][]string } `json:"user"`
	Annotations map[string]string                   `json:"annotations"`
	ObjectRef   map[string]string                   `json:"objectRef"`
	Request     map[string]any                      `json:"requestObject"`
}

// records reads the agent's audit log: the request records of completed
// calls (a mutating call also has a record written ahead of it).
func (a *agent) records(t *testing.T) []record {
	t.Helper()
	data, err := os.ReadFile(a.p.path(a.dir + `\audit.log`))
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit record %q: %v", line, err)
		}
		if r.Annotations["pipeguard.io/record"] == "request" && r.Stage == "ResponseComplete" {
			out = append(out, r)
		}
	}
	return out
}

// standinRun is one entry of the PowerShell stand-in's log: a one-off run
// ("process"), a worker's start ("start"), a request a worker began ("run")
// or answered ("end"), a worker whose input closed ("exit").
type standinRun struct {
	Kind        string            `json:"kind"`
	PID         int               `json:"pid"`
	CommandLine string            `json:"commandLine"`
	Args        []string          `json:"args"`
	Script      string            `json:"script"`
	Env         map[string]string `json:"env"`
	Missing     []string          `json:"missing"`
	ID          uint64            `json:"id"`
	Values      map[string]string `json:"values"`
	At          int64             `json:"at"`
}

// powershellRuns reads what the PowerShell stand-in recorded, each process
// in a file of its own (powershell-<pid>.jsonl), in the order the entries
// were made.
func (a *agent) powershellRuns(t *testing.T) []standinRun {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(a.p.path(a.dir), "powershell-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []standinRun
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var r standinRun
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("stand-in record %q: %v", line, err)
			}
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].At < runs[j].At })
	return runs
}

// powershellEntries returns the stand-in's entries of the given kinds.
func (a *agent) powershellEntries(t *testing.T, kinds ...string) []standinRun {
	t.Helper()
	var out []standinRun
	for _, r := range a.powershellRuns(t) {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, r)
			}
		}
	}
	return out
}

// powershellStarts returns every start of a PowerShell process: workers,
// and one-off runs.
func (a *agent) powershellStarts(t *testing.T) []standinRun {
	t.Helper()
	return a.powershellEntries(t, "start", "process")
}

// powershellRequests returns every script a worker began to run.
func (a *agent) powershellRequests(t *testing.T) []standinRun {
	t.Helper()
	return a.powershellEntries(t, "run")
}

// kubelet returns the host path of a path below C:\var\lib\kubelet.
func kubelet(p *prefix, rel string) (win, host string) {
	win = `C:\var\lib\kubelet\` + rel
	return win, p.path(win)
}

// exists reports whether a host path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
