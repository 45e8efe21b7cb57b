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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// agent is pipeguard-agent.exe running under Wine.
type agent struct {
	p      *prefix
	cmd    *exec.Cmd
	dir    string      // C:\pipeguard\<test>, holding its audit log and fixture files
	log    *syncBuffer // its output but Wine's trace lines
	trace  *syncBuffer // Wine's trace lines of its stderr (processTrace)
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

// startAgent runs the agent with its audit log in a directory of the
// test's own, and waits until it listens. Wine traces the processes it
// creates (processTrace).
func startAgent(t *testing.T, p *prefix, args ...string) *agent {
	t.Helper()
	return startAgentExe(t, p, p.exe("pipeguard-agent"), nil, args...)
}

// startAgentExe is startAgent for the program exe, with the environment
// entries env returns once the agent's directory exists (nil: none).
func startAgentExe(t *testing.T, p *prefix, exe string, env func(a *agent) []string, args ...string) *agent {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	a := &agent{p: p, dir: `C:\pipeguard\` + name, log: &syncBuffer{}, trace: &syncBuffer{}, done: make(chan error, 1)}
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
	cmd.Env = append(cmd.Env, processTrace)
	if env != nil {
		cmd.Env = append(cmd.Env, env(a)...)
	}
	cmd.Stdout, cmd.Stderr = a.log, &traceSplitter{log: a.log, trace: a.trace}
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

// processTrace has Wine trace the process calls of the agent alone (the
// harness's WINEDEBUG=-all stays for every other program): each process
// the agent creates is one NtCreateUserProcess line on its stderr. The
// prefix's wineserver and Wine's services are running before any agent
// starts (setup), so these lines are the agent's own.
const processTrace = "WINEDEBUG=-all,+process"

// processStart is Wine 8's trace of a process creation, e.g.
//
//	0024:trace:process:NtCreateUserProcess L"\\??\\C:\\windows\\system32\\cmd.exe" pid 010c tid 0110 handles ...
var processStart = regexp.MustCompile(`^[0-9a-f]+:trace:process:NtCreateUserProcess .* pid [0-9a-f]+ `)

// traceLine is any line of Wine's debug channels.
var traceLine = regexp.MustCompile(`^[0-9a-f]+:(trace|fixme|err|warn):`)

// traceSplitter sends Wine's trace lines of a program's stderr to trace
// and every other line to log, so that the program's own log parses as it
// would without the trace. It splits at line ends, keeping a partial line
// until its end arrives.
type traceSplitter struct {
	log, trace *syncBuffer
	mu         sync.Mutex
	partial    []byte
}

func (s *traceSplitter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := s.partial[:i+1]
		if traceLine.Match(line) {
			s.trace.Write(line)
		} else {
			s.log.Write(line)
		}
		s.partial = s.partial[i+1:]
	}
}

// processStarts returns Wine's trace lines of the processes the agent has
// created so far.
func (a *agent) processStarts() []string { return processStarts(a.trace.String()) }

// checkNoProcess fails the test if the agent created a process, or if
// Wine traced none of its process calls at all (the agent's own
// NtQueryInformationProcess calls among them), which would make a count
// of 0 say nothing.
func (a *agent) checkNoProcess(t *testing.T) {
	t.Helper()
	if !strings.Contains(a.trace.String(), ":trace:process:") {
		t.Errorf("Wine traced none of the agent's process calls: %s did not take effect, so no process creation could be counted", processTrace)
	}
	if starts := a.processStarts(); len(starts) != 0 {
		t.Errorf("the agent created %d processes, want none:\n%s", len(starts), strings.Join(starts, "\n"))
	}
}

// processStarts returns the process creations in a trace.
func processStarts(trace string) []string {
	var out []string
	for _, line := range strings.Split(trace, "\n") {
		if processStart.MatchString(line + " ") {
			out = append(out, line)
		}
	}
	return out
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
