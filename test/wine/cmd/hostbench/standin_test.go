//go:build windows

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLogs writes files into a new directory and returns the
// PIPEGUARD_STANDIN_LOG path that names them.
func writeLogs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "powershell.jsonl")
}

func TestCountStandinLog(t *testing.T) {
	path := writeLogs(t, map[string]string{
		// One-off runs, one an earlier run's.
		"powershell-100.jsonl": `{"kind":"process","pid":100,"at":50}` + "\n",
		"powershell-104.jsonl": `{"kind":"process","pid":104,"at":1000,"env":{"path":"` + strings.Repeat("x", 200000) + `"}}` + "\n",
		"powershell-108.jsonl": `{"kind":"process","pid":108,"at":1001}` + "\n",
		// A worker: its start, two requests, their ends, its exit.
		"powershell-112.jsonl": `{"kind":"start","pid":112,"at":1002}
{"kind":"run","pid":112,"id":1,"at":1003}
{"kind":"end","pid":112,"id":1,"at":1004}
{"kind":"run","pid":112,"id":2,"at":1005}
{"kind":"end","pid":112,"id":2,"at":1006}
{"kind":"exit","pid":112,"at":1007}
`,
		// Not the stand-in's per-process logs.
		"powershell.jsonl":         `{"kind":"process","at":2000}` + "\n",
		"powershell-x1.jsonl":      `{"kind":"process","at":2000}` + "\n",
		"powershell-116.jsonl.bak": `{"kind":"process","at":2000}` + "\n",
		"other-120.jsonl":          `{"kind":"process","at":2000}` + "\n",
		"notes.txt":                "garbage",
	})
	c, err := countStandinLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := standinCount{Dir: filepath.Dir(path), Files: 4, Processes: 2, WorkerStarts: 1, WorkerRuns: 2}
	if c != want {
		t.Fatalf("count = %+v\nwant    %+v", c, want)
	}
}

func TestCountStandinLogRefusesWhatItCannotRead(t *testing.T) {
	for name, tc := range map[string]struct {
		log  string
		want string
	}{
		"garbage":          {"not json\n", "entry 1 of the PowerShell stand-in's log "},
		"a truncated line": {`{"kind":"start","at":1}` + "\n" + `{"kind":"run","at"`, "entry 2 of the PowerShell stand-in's log "},
		"not an object":    {`{"kind":"start","at":1}` + "\n[1,2]\n", "entry 2 of the PowerShell stand-in's log "},
		"a string time":    {`{"kind":"run","at":"soon"}` + "\n", "entry 1 of the PowerShell stand-in's log "},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeLogs(t, map[string]string{"powershell-7.jsonl": tc.log})
			_, err := countStandinLog(path, 0)
			if err == nil {
				t.Fatal("a log that cannot be read was counted")
			}
			if !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), "the process starts cannot be checked against it") {
				t.Fatalf("err = %q, want it to start with %q and say the starts cannot be checked", err, tc.want)
			}
		})
	}
	t.Run("a directory that does not exist", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing", "powershell.jsonl")
		_, err := countStandinLog(path, 0)
		want := "reading the directory of the PowerShell stand-in's logs (PIPEGUARD_STANDIN_LOG=" + path + "): "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("err = %v, want it to start with %q", err, want)
		}
	})
}
