//go:build wine && linux

package wine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fixture agent (cmd/fixtureagent: pipeguard-agent's command with a
// fixture as its host), whose Win32 calls go to a fixture described in a
// JSON file and on to Wine for what the file does not cover, and the
// fixture's call logs.

var (
	fixtureAgentOnce sync.Once
	fixtureAgentErr  error
)

// fixtureAgent builds pipeguard-agent-fixture.exe, the fixture agent
// (cmd/fixtureagent), once per test run.
func fixtureAgent(t *testing.T, p *prefix) string {
	t.Helper()
	exe := p.exe("pipeguard-agent-fixture")
	fixtureAgentOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			fixtureAgentErr = err
			return
		}
		build := exec.Command("go", "build", "-trimpath", "-o", exe, "./test/wine/cmd/fixtureagent")
		build.Dir = root
		build.Env = p.goEnv
		if out, err := build.CombinedOutput(); err != nil {
			fixtureAgentErr = fmt.Errorf("building the fixture agent: %v\n%s", err, out)
		}
	})
	if fixtureAgentErr != nil {
		t.Fatal(fixtureAgentErr)
	}
	return exe
}

// startFixtureAgent is startAgent for the fixture build: it writes fixture
// as the agent's Win32 and WMI host (PIPEGUARD_WIN32_FIXTURE) in the
// agent's directory, with the fixture's call logs beside it (win32.jsonl,
// wmi.jsonl).
func startFixtureAgent(t *testing.T, p *prefix, fixture any, args ...string) *agent {
	t.Helper()
	exe := fixtureAgent(t, p)
	data, err := json.Marshal(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return startAgentExe(t, p, exe, func(a *agent) []string {
		if err := os.WriteFile(p.path(a.dir+`\win32.json`), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"PIPEGUARD_WIN32_FIXTURE=" + a.dir + `\win32.json`, "PIPEGUARD_WIN32_FIXTURE_LOG=" + a.dir + `\win32.jsonl`,
			"PIPEGUARD_WMI_FIXTURE_LOG=" + a.dir + `\wmi.jsonl`}
	}, args...)
}

// win32Call is a line of the fixture's call log: To is "fixture" for every
// call the agent made, and "wine" for one the fixture passed on to Wine.
type win32Call struct {
	To    string `json:"to"`
	Func  string `json:"func"`
	Path  string `json:"path"`
	Error string `json:"error"`
}

// win32Calls reads the fixture's call log.
func (a *agent) win32Calls(t *testing.T) []win32Call {
	t.Helper()
	data, err := os.ReadFile(a.p.path(a.dir + `\win32.jsonl`))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []win32Call
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c win32Call
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("fixture call log line %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// wmiCall is a line of the WMI fixture's call log
// (cmd/fixtureagent/wmi.go): a query, a Get or a method
// call, with the names of its in-parameters only.
type wmiCall struct {
	Kind        string   `json:"kind"`
	Namespace   string   `json:"namespace"`
	WQL         string   `json:"wql"`
	Path        string   `json:"path"`
	Method      string   `json:"method"`
	On          string   `json:"on"`
	Params      []string `json:"params"`
	Objects     int      `json:"objects"`
	ReturnValue *uint32  `json:"returnValue"`
	Held        bool     `json:"held"`
	Error       string   `json:"error"`
}

// wmiLog reads the WMI fixture's call log as it is on disk.
func (a *agent) wmiLog(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(a.p.path(a.dir + `\wmi.jsonl`))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return data
}

// wmiCalls reads the WMI fixture's call log.
func (a *agent) wmiCalls(t *testing.T) []wmiCall {
	t.Helper()
	var out []wmiCall
	for _, line := range bytes.Split(bytes.TrimSpace(a.wmiLog(t)), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c wmiCall
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("WMI fixture call log line %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// wmiMethods returns the methods among calls, as Class.Method.
func wmiMethods(calls []wmiCall) []string {
	var out []string
	for _, c := range calls {
		if c.Kind == "call" {
			out = append(out, c.Method)
		}
	}
	return out
}

// TestLifecycleFixtureRefusesBadFixtures starts the fixture build with
// fixtures a careless or hostile test could give it: each time it exits
// with 2 before listening, saying what is wrong with the file, and never
// falls back to Wine alone.
func TestLifecycleFixtureRefusesBadFixtures(t *testing.T) {
	p := need(t)
	exe := fixtureAgent(t, p)
	dir := `C:\pipeguard\` + t.Name()
	if err := os.MkdirAll(p.path(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		file string // "" sets no PIPEGUARD_WIN32_FIXTURE
		want string
	}{
		"no fixture":    {"", "this is a test build (test/wine/cmd/fixtureagent) whose Win32 calls go to a fixture, and PIPEGUARD_WIN32_FIXTURE is not set: set it to the fixture's JSON file, or run the shipped build"},
		"missing file":  {"-", `PIPEGUARD_WIN32_FIXTURE=` + dir + `\missing.json: open ` + dir + `\missing.json: `},
		"garbage":       {"\x00\xffnot json", "decoding the JSON: invalid character '\\x00' looking for beginning of value"},
		"truncated":     {`{"disks":[{"number":3,`, "decoding the JSON: unexpected EOF"},
		"two objects":   {`{}{}`, "decoding the JSON: data after the object"},
		"unknown field": {`{"disk":[]}`, `decoding the JSON: json: unknown field "disk"`},
		"too large":     {`{"files":["` + strings.Repeat("A", 1<<20) + `"]}`, "the file is larger than 1048576 bytes"},
		"negative size": {`{"disks":[{"number":3,"size":-1}]}`, "disks[0] (disk 3): size -1 is negative"},
		"disk twice":    {`{"disks":[{"number":3},{"number":3}]}`, "disks[1]: disk 3 is given twice"},
		"two page83 forms": {`{"disks":[{"number":3,"page83":{"ascii":"x","naa":"60"}}]}`,
			"disks[0] (disk 3): page83: give exactly one of ascii, naa and raw, not 2"},
		"page83 not hex":   {`{"disks":[{"number":3,"page83":{"naa":"6z"}}]}`, "disks[0] (disk 3): page83: naa: encoding/hex: invalid byte"},
		"not a volume id":  {`{"volumes":[{"id":"C:\\"}]}`, `volumes[0]: id "C:\\" is not a volume GUID path`},
		"negative extent":  {`{"volumes":[{"id":"` + jsonEscape(lcVolume) + `","extents":[{"disk":3,"offset":-1}]}]}`, "volumes[0].extents[0]: offset -1 and length 0 must not be negative"},
		"unknown volume":   {`{"mountPoints":{"C:\\x":"` + jsonEscape(lcVolume) + `"}}`, `mountPoints: mounting ` + lcVolume + ` at C:\x (give a volume of volumes): SetVolumeMountPointW C:\x\: The system cannot find the file specified.`},
		"relative link":    {`{"links":{"x":"C:\\y"}}`, `links: "x" → "C:\\y": give an absolute local link path (C:\...) and a target`},
		"share as a mount": {`{"mountPoints":{"\\\\server\\share":"` + jsonEscape(lcVolume) + `"}}`, `mountPoints: "\\\\server\\share" is not an absolute local folder (C:\...)`},
		// The fields and rules of the WMI fixture.
		"partition style": {`{"disks":[{"number":3,"partitionStyle":"zfs"}]}`, `disks[0] (disk 3): partitionStyle "zfs": give "gpt", "mbr" or "raw"`},
		"volume on no disk": {`{"volumes":[{"id":"` + jsonEscape(lcVolume) + `","extents":[{"disk":9,"offset":0,"length":1}]}]}`,
			"volumes[0]: its first extent is on disk 9, which disks does not give: the WMI fixture places a volume on its disk"},
		"hold of no method": {`{"wmiHolds":[{"method":"Format"}]}`, `wmiHolds[0]: method "Format": give Class.Method, e.g. MSFT_Volume.Format`},
		"target of no disk": {`{"iscsiPortals":[{"address":"p","targets":[{"iqn":"iqn.x","disks":[5]}]}]}`, "iscsiPortals[0].targets[0]: disk 5 is not one of disks"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // an agent that listens instead of refusing is killed
			defer cancel()
			cmd := p.command(ctx, exe, "--kubelet-path", `C:\var\lib\kubelet`, "--audit-log-path", dir+`\audit.log`, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
			switch tc.file {
			case "":
			case "-":
				cmd.Env = append(cmd.Env, "PIPEGUARD_WIN32_FIXTURE="+dir+`\missing.json`)
			default:
				file := dir + `\` + strings.ReplaceAll(name, " ", "-") + ".json"
				if err := os.WriteFile(p.path(file), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd.Env = append(cmd.Env, "PIPEGUARD_WIN32_FIXTURE="+file)
			}
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2:\n%s", cmd.ProcessState, out)
			}
			var refusal struct{ Msg, Error string }
			for _, line := range bytes.Split(out, []byte("\n")) {
				if json.Unmarshal(line, &refusal) == nil && (strings.HasPrefix(refusal.Msg, "invalid configuration: the Win32 fixture") ||
					strings.HasPrefix(refusal.Msg, "invalid configuration: the WMI fixture")) {
					break
				}
				refusal.Error = ""
			}
			if !strings.Contains(refusal.Error, tc.want) || bytes.Contains(out, []byte(`"listening"`)) {
				t.Fatalf("the agent's refusal says %q, want it to hold %q, and no listening:\n%s", refusal.Error, tc.want, out)
			}
		})
	}
}

func jsonEscape(s string) string { return strings.Trim(quote(s), `"`) }

// TestLifecycleFixtureAbsentFromShippedAgent checks the Windows agent the
// tests run, built as it ships (no tags), for the fixtures: the names of
// their environment variables are in the fixture build and nowhere in the
// shipped one.
func TestLifecycleFixtureAbsentFromShippedAgent(t *testing.T) {
	p := need(t)
	fixture, err := os.ReadFile(fixtureAgent(t, p))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(p.exe("pipeguard-agent"))
	if err != nil {
		t.Fatal(err)
	}
	for name, what := range map[string]string{"PIPEGUARD_WIN32_FIXTURE": "Win32 calls", "PIPEGUARD_WMI_FIXTURE_LOG": "WMI calls"} {
		if !bytes.Contains(fixture, []byte(name)) {
			t.Errorf("the fixture build does not hold %s: this check no longer tells the builds apart", name)
		}
		if bytes.Contains(shipped, []byte(name)) {
			t.Errorf("pipeguard-agent.exe, built without tags, holds %s: the shipped agent can answer %s from a fixture", name, what)
		}
	}
}
