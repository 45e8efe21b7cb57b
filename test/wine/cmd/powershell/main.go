//go:build windows

// Command powershell stands in for powershell.exe in the Windows tests
// (test/wine), where Wine has no PowerShell. The agent starts it through real
// Windows process creation, as it starts PowerShell on a node.
//
// It appends one JSON object per run to the file named by
// PIPEGUARD_STANDIN_LOG: the raw command line (GetCommandLineW), the parsed
// arguments, the script and the environment. It then checks that every
// $Env:NAME the script reads is set, failing as PowerShell does under
// $ErrorActionPreference='Stop' when one is missing, and answers with the
// output the file PIPEGUARD_STANDIN_ANSWERS holds for the first of its
// fragments found in the script (empty output when none is).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/sys/windows"
)

// Run is one recorded run.
type Run struct {
	CommandLine string            `json:"commandLine"`
	Args        []string          `json:"args"`
	Script      string            `json:"script"`
	Env         map[string]string `json:"env"`
	Missing     []string          `json:"missing,omitempty"`
}

var envRef = regexp.MustCompile(`(?i)\$env:([A-Za-z_][A-Za-z0-9_]*)`)

func main() {
	run := Run{
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
	for _, m := range envRef.FindAllStringSubmatch(run.Script, -1) {
		if _, ok := run.Env[strings.ToLower(m[1])]; !ok {
			run.Missing = append(run.Missing, m[1])
		}
	}
	sort.Strings(run.Missing)
	if err := record(run); err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		os.Exit(3)
	}
	if run.Script == "" {
		fmt.Fprintln(os.Stderr, "powershell stand-in: no -Command script")
		os.Exit(2)
	}
	if len(run.Missing) > 0 {
		fmt.Fprintf(os.Stderr, "The variable '$Env:%s' cannot be retrieved because it has not been set.\n", run.Missing[0])
		os.Exit(1)
	}
	out, err := answer(run.Script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "powershell stand-in:", err)
		os.Exit(3)
	}
	fmt.Print(out)
}

// record appends run to the log file.
func record(run Run) error {
	path := os.Getenv("PIPEGUARD_STANDIN_LOG")
	if path == "" {
		return nil
	}
	line, err := json.Marshal(run)
	if err != nil {
		return err
	}
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
