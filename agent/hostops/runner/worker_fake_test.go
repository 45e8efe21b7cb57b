package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The tests run the pool against the test binary itself, started again as
// a fake PowerShell worker that speaks the worker protocol: the real
// bootstrap needs PowerShell.
const (
	fakeWorkerEnv    = "PIPEGUARD_FAKE_POWERSHELL_WORKER"
	fakeWorkerLogEnv = "PIPEGUARD_FAKE_POWERSHELL_WORKER_LOG"
	fakeChildEnv     = "PIPEGUARD_FAKE_POWERSHELL_CHILD"
)

// fakeEntry is one line of the fake worker's log.
type fakeEntry struct {
	Kind    string            `json:"kind"` // start, register, run, end, child
	PID     int               `json:"pid"`
	Args    []string          `json:"args,omitempty"`
	Environ []string          `json:"environ,omitempty"`
	Name    string            `json:"name,omitempty"`
	Script  string            `json:"script,omitempty"`
	ID      uint64            `json:"id,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	At      int64             `json:"at"` // UnixNano
}

// fakeWorkerMain serves the worker protocol on stdin and stdout. A script
// is a command for the fake:
//
//	answer:TEXT       answer TEXT
//	echo-env          answer the request's values as sorted NAME=value lines
//	sleep:DURATION    answer "slept" after DURATION
//	fail:MESSAGE      answer an error with MESSAGE
//	hang              never answer
//	crash             write to stderr and exit 3 without answering
//	garbage           write a line that is not JSON
//	wrong-id          answer another request's id
//	huge:N            write a line of N bytes
//	partial           write half an answer and exit 0
//	spawn-hang        start a child process that sleeps, then never answer
func fakeWorkerMain() int {
	logf := func(e fakeEntry) {
		e.PID, e.At = os.Getpid(), time.Now().UnixNano()
		dir := os.Getenv(fakeWorkerLogEnv)
		if dir == "" {
			return
		}
		// A file per process: appends from several processes to one file
		// can interleave (under Wine they do).
		line, _ := json.Marshal(e)
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("worker-%d.jsonl", e.PID)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake worker:", err)
			os.Exit(4)
		}
		_, _ = f.Write(append(line, '\n'))
		_ = f.Close()
	}
	logf(fakeEntry{Kind: "start", Args: os.Args[1:], Environ: os.Environ()})
	out := bufio.NewWriter(os.Stdout)
	answer := func(v any) {
		line, _ := json.Marshal(v)
		_, _ = out.Write(append(line, '\n'))
		_ = out.Flush()
	}
	scripts := map[string]string{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var req struct {
			Register, Script, Run string
			ID                    uint64
			Env                   map[string]string
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake worker: request is not JSON:", err)
			return 5
		}
		if req.Register != "" {
			scripts[req.Register] = req.Script
			logf(fakeEntry{Kind: "register", Name: req.Register, Script: req.Script})
			continue
		}
		script, ok := scripts[req.Run]
		logf(fakeEntry{Kind: "run", Name: req.Run, Script: script, ID: req.ID, Env: req.Env})
		if !ok {
			answer(map[string]any{"id": req.ID, "ok": false, "error": "no script is registered as " + req.Run})
			continue
		}
		verb, arg, _ := strings.Cut(script, ":")
		switch verb {
		case "answer":
			answer(map[string]any{"id": req.ID, "ok": true, "out": arg})
		case "echo-env":
			var lines []string
			for k, v := range req.Env {
				lines = append(lines, k+"="+v)
			}
			sort.Strings(lines)
			answer(map[string]any{"id": req.ID, "ok": true, "out": strings.Join(lines, "\n")})
		case "sleep":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
			logf(fakeEntry{Kind: "end", Name: req.Run, ID: req.ID})
			answer(map[string]any{"id": req.ID, "ok": true, "out": "slept"})
		case "fail":
			answer(map[string]any{"id": req.ID, "ok": false, "error": arg})
		case "hang":
			for {
				time.Sleep(time.Hour) // never answers (a bare select{} is a deadlock to the runtime)
			}
		case "crash":
			fmt.Fprintln(os.Stderr, "starting")
			fmt.Fprintln(os.Stderr, "boom: the disk is gone")
			return 3
		case "garbage":
			_, _ = out.WriteString("WARNING: not an answer\n")
			_ = out.Flush()
		case "wrong-id":
			answer(map[string]any{"id": req.ID + 1, "ok": true, "out": "x"})
		case "huge":
			var n int
			fmt.Sscan(arg, &n)
			_, _ = out.WriteString(strings.Repeat("x", n) + "\n")
			_ = out.Flush()
		case "partial":
			_, _ = out.WriteString(fmt.Sprintf(`{"id":%d,"ok":tr`, req.ID))
			_ = out.Flush()
			return 0
		case "spawn-hang":
			child := exec.Command(os.Args[0])
			child.Env = append(os.Environ(), fakeChildEnv+"=1")
			if err := child.Start(); err != nil {
				answer(map[string]any{"id": req.ID, "ok": false, "error": err.Error()})
				continue
			}
			logf(fakeEntry{Kind: "child", ID: uint64(child.Process.Pid)})
			for {
				time.Sleep(time.Hour) // never answers (a bare select{} is a deadlock to the runtime)
			}
		default:
			answer(map[string]any{"id": req.ID, "ok": false, "error": "the fake worker has no command " + verb})
		}
	}
	return 0
}
