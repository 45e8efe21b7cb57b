//go:build windows

// Command powershell stands in for powershell.exe in the Windows tests
// (test/wine), where Wine has no PowerShell. The agent starts it through real
// Windows process creation, as it starts PowerShell on a node.
//
// It appends JSON objects to a file of its own beside the one named by
// PIPEGUARD_STANDIN_LOG (powershell.jsonl: powershell-<pid>.jsonl), and
// answers with the output the file PIPEGUARD_STANDIN_ANSWERS holds for the
// first of its fragments found in the script (empty output when none is).
// It runs in one of two modes:
//
//   - Per process, for a -Command that is not the worker bootstrap: one
//     entry of kind "process" with the raw command line
//     (GetCommandLineW), the parsed arguments, the script and the
//     environment; it then checks that every $Env:NAME the script reads is
//     set, failing as PowerShell does under $ErrorActionPreference='Stop'
//     when one is missing, and prints the answer.
//   - As a worker, for the bootstrap (runner.WorkerBootstrap, recognised by
//     runner.WorkerMarker): one entry of kind "start" with the command line
//     and the environment, then it serves the worker protocol on standard input and output. Each
//     run records an entry of kind "run" with the registered script, the
//     request's values, the variables the script reads that the request did
//     not set, and when it began; and, once answered, one of kind "end".
//     A run reading an unset variable is answered with PowerShell's error.
//     When its input ends, it records an entry of kind "exit" and exits 0.
//
// Answers may start with directives: "<<hang>>" never answers, "<<exit>>"
// exits with status 3 without answering (a crash), and "<<sleep:DURATION>>"
// waits that long before answering with the rest.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/windows"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Run is one recorded entry.
type Run struct {
	// Kind is "process" (a one-off run), "start" (a worker started), "run"
	// (a worker request began), "end" (it was answered) or "exit" (the
	// worker's input ended and it exits).
	Kind        string            `json:"kind"`
	PID         int               `json:"pid"`
	CommandLine string            `json:"commandLine,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Script      string            `json:"script,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Missing     []string          `json:"missing,omitempty"`
	// ID and Values are a worker request's id and values.
	ID     uint64            `json:"id,omitempty"`
	Values map[string]string `json:"values,omitempty"`
	// At is when the entry was made, in Unix nanoseconds.
	At int64 `json:"at"`
}

var envRef = regexp.MustCompile(`(?i)\$env:([A-Za-z_][A-Za-z0-9_]*)`)

func main() {
	run := Run{
		Kind:        "process",
		CommandLine: windows.UTF16PtrToString(windows.GetCommandLine()),
		Args:        os.Args[1:],
		Env:         map[string]string{},
	}
	for i, a := range run.Args {
		if strings.EqualFold(a, "-Command") && i+1 < len(run.Args) {
			run.Script = strings.Join(run.Args[i+1:], " ")
		}
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			run.Env[strings.ToLower(k)] = v
		}
	}
	if strings.HasPrefix(run.Script, runner.WorkerMarker) {
		run.Kind = "start"
		os.Exit(serveWorker(run))
	}
	run.Missing = missing(run.Script, run.Env)
	if err := record(run); err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		os.Exit(3)
	}
	if run.Script == "" {
		fmt.Fprintln(os.Stderr, "powershell stand-in: no -Command script")
		os.Exit(2)
	}
	if len(run.Missing) > 0 {
		fmt.Fprintln(os.Stderr, unsetError(run.Missing[0]))
		os.Exit(1)
	}
	out, err := answer(run.Script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		os.Exit(3)
	}
	out, code := directives(out)
	if code >= 0 {
		os.Exit(code)
	}
	fmt.Print(out)
}

// missing returns the $Env: variables script reads that set lacks (keys in
// lower case), sorted.
func missing(script string, set map[string]string) []string {
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(script, -1) {
		if _, ok := set[strings.ToLower(m[1])]; !ok {
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// unsetError is PowerShell's message for reading an unset variable.
func unsetError(name string) string {
	return fmt.Sprintf("The variable '$Env:%s' cannot be retrieved because it has not been set.", name)
}

// directives applies the directives at the start of an answer: it returns
// the output to give, and an exit code >= 0 when the process must exit
// instead of answering. "<<hang>>" never returns.
func directives(out string) (string, int) {
	for {
		switch {
		case strings.HasPrefix(out, "<<hang>>"):
			for {
				time.Sleep(time.Hour) // never answers (a bare select{} is a deadlock to the runtime)
			}
		case strings.HasPrefix(out, "<<exit>>"):
			fmt.Fprintln(os.Stderr, "powershell stand-in: exiting mid-request as the answers say")
			return "", 3
		case strings.HasPrefix(out, "<<sleep:"):
			spec, rest, ok := strings.Cut(strings.TrimPrefix(out, "<<sleep:"), ">>")
			d, err := time.ParseDuration(spec)
			if !ok || err != nil {
				fmt.Fprintf(os.Stderr, "powershell stand-in: bad sleep directive in %q\n", out)
				return "", 4
			}
			time.Sleep(d)
			out = rest
		default:
			return out, -1
		}
	}
}

// serveWorker serves the worker protocol (runner.WorkerBootstrap) on
// standard input and output until input ends, and returns the exit code.
func serveWorker(start Run) int {
	if err := record(start); err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		return 3
	}
	stdout := bufio.NewWriter(os.Stdout)
	reply := func(v map[string]any) error {
		line, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(append(line, '\n')); err != nil {
			return err
		}
		return stdout.Flush()
	}
	scripts := map[string]string{}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), runner.DefaultWorkerMaxLine)
	for in.Scan() {
		var req struct {
			Register, Script, Run string
			ID                    uint64
			Env                   map[string]string
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "ConvertFrom-Json : Invalid JSON primitive: %v\n", err)
			return 1
		}
		if req.Register != "" {
			scripts[req.Register] = req.Script
			continue
		}
		script, ok := scripts[req.Run]
		set := map[string]string{}
		for k, v := range req.Env {
			set[strings.ToLower(k)] = v
		}
		run := Run{Kind: "run", ID: req.ID, Script: script, Values: req.Env, Missing: missing(script, set)}
		if err := record(run); err != nil {
			fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
			return 3
		}
		ans := map[string]any{"id": req.ID, "ok": true, "out": ""}
		switch {
		case !ok:
			ans["ok"], ans["error"] = false, "no script is registered as "+req.Run
		case len(run.Missing) > 0:
			ans["ok"], ans["error"] = false, unsetError(run.Missing[0])
		default:
			out, err := answer(script)
			if err != nil {
				fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
				return 3
			}
			out, code := directives(out)
			if code >= 0 {
				return code
			}
			ans["out"] = out
		}
		if err := record(Run{Kind: "end", ID: req.ID}); err != nil {
			fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
			return 3
		}
		if err := reply(ans); err != nil {
			fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
			return 3
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in: reading requests:", err)
		return 3
	}
	if err := record(Run{Kind: "exit"}); err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		return 3
	}
	return 0
}

// record appends run to the log file.
func record(run Run) error {
	path := os.Getenv("PIPEGUARD_STANDIN_LOG")
	if path == "" {
		return nil
	}
	run.PID, run.At = os.Getpid(), time.Now().UnixNano()
	line, err := json.Marshal(run)
	if err != nil {
		return err
	}
	// A file per process beside path: appends from several processes to
	// one file interleave under Wine.
	path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, filepath.Ext(path)), run.PID, filepath.Ext(path))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// answer returns the canned output for script: the answers file is a JSON
// list of {"fragment": ..., "output": ...}, tried in order.
func answer(script string) (string, error) {
	path := os.Getenv("PIPEGUARD_STANDIN_ANSWERS")
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var answers []struct {
		Fragment string `json:"fragment"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal(data, &answers); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	for _, a := range answers {
		if strings.Contains(script, a.Fragment) {
			return a.Output, nil
		}
	}
	return "", nil
}
