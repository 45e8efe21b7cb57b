//go:build windows

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// standinCount is what the PowerShell stand-in (test/wine/cmd/powershell)
// logged while hostbench ran.
type standinCount struct {
	// Dir is the directory of the logs.
	Dir string `json:"dir"`
	// Files is how many of the stand-in's log files were read.
	Files int `json:"files"`
	// Processes counts the one-off runs (entries of kind "process").
	Processes int `json:"processes"`
	// WorkerStarts counts the workers started (kind "start").
	WorkerStarts int `json:"workerStarts"`
	// WorkerRuns counts the requests workers began (kind "run").
	WorkerRuns int `json:"workerRuns"`
}

// countStandinLog counts the entries made at or after since (Unix
// nanoseconds) in the stand-in's logs. logPath is PIPEGUARD_STANDIN_LOG:
// the stand-in writes one file per process beside it, named after it with
// the process id added (powershell.jsonl: powershell-<pid>.jsonl). Entries
// older than since, from an earlier run, are not counted. An entry that is
// not JSON is an error: the counts could not be checked.
func countStandinLog(logPath string, since int64) (standinCount, error) {
	dir, base := filepath.Split(logPath)
	dir = filepath.Clean(dir)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext) + "-"
	c := standinCount{Dir: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return c, fmt.Errorf("reading the directory of the PowerShell stand-in's logs (PIPEGUARD_STANDIN_LOG=%s): %w", logPath, err)
	}
	for _, e := range entries {
		name := e.Name()
		pid, ok := strings.CutSuffix(strings.TrimPrefix(name, stem), ext)
		if !e.Type().IsRegular() || !strings.HasPrefix(name, stem) || !ok || !allDigits(pid) {
			continue
		}
		if err := c.add(filepath.Join(dir, name), since); err != nil {
			return c, err
		}
		c.Files++
	}
	return c, nil
}

// add counts the entries of one log file.
func (c *standinCount) add(path string, since int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the PowerShell stand-in's log: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for n := 1; ; n++ {
		var e struct {
			Kind string `json:"kind"`
			At   int64  `json:"at"`
		}
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("entry %d of the PowerShell stand-in's log %s is not a JSON object (%v): the process starts cannot be checked against it", n, path, err)
		}
		if e.At < since {
			continue
		}
		switch e.Kind {
		case "process":
			c.Processes++
		case "start":
			c.WorkerStarts++
		case "run":
			c.WorkerRuns++
		}
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
