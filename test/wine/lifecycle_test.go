//go:build wine && linux

package wine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The lifecycles of lifecycle_calls_test.go replayed against the fixture
// agent (cmd/fixtureagent), whose Win32 calls go to a fixture (the disks, volumes,
// mount points and links Wine has none of) and on to Wine for the rest.
// Their WMI calls go to the fixture's WMI provider (the storage and SMB
// classes Wine's WMI service does not have). The filesystem group, the
// pipes, the guard and the audit log are the real ones.

// lcTotal and lcFree are the fixture volume's size and free bytes.
const (
	lcTotal = 10 << 30
	lcFree  = 9 << 30
)

// lifecycleFixture is the host the driver's recorded path needs (see the
// top of lifecycle_calls_test.go): the disk, new (raw, its one volume made
// when PartitionDisk partitions it, unformatted), and the publish path a
// link to the staging path.
func lifecycleFixture(t *testing.T, driver string) map[string]any {
	lun, err := strconv.Atoi(lcLUN)
	if err != nil {
		t.Fatal(err)
	}
	disk := map[string]any{"number": lcDisk, "serial": "lc-serial", "size": lcTotal + 16<<20, "partitionStyle": "raw"}
	volume := map[string]any{"id": lcVolume, "partition": 2, "fileSystem": "", "total": lcTotal, "free": lcFree,
		"extents": []any{map[string]any{"disk": lcDisk, "offset": 16 << 20, "length": lcTotal}}}
	f := map[string]any{"disks": []any{disk}, "volumes": []any{volume}}
	switch driver {
	case "azuredisk":
		disk["scsi"] = map[string]any{"port": 0, "path": 0, "target": 0, "lun": lun}
		f["links"] = map[string]string{lcPublish: lcAzureStaging}
	case "gce-pd":
		disk["page83"] = map[string]any{"ascii": "Google " + lcPV}
		f["links"] = map[string]string{lcPublish: lcGCEStaging}
	case "smb":
		f = map[string]any{"files": []string{lcShare}}
	default:
		t.Fatalf("no fixture for driver %s", driver)
	}
	return f
}

// lifecycleDirs are what kubelet creates before the driver's first call: the
// staging directory, and the parent of the publish path.
func lifecycleDirs(driver string) []string {
	parent := lcPublish[:strings.LastIndexByte(lcPublish, '\\')]
	staging := map[string]string{"azuredisk": lcAzureStaging, "gce-pd": lcGCEStaging, "smb": lcSMBStaging}[driver]
	return []string{staging, parent}
}

// lifecycleTrees hold everything a replay leaves on the Wine disk: the
// drivers' staging directories and the pod's.
var lifecycleTrees = []string{lcAzureStageDir, lcGCEStageDir, lcSMBStageDir, lcKubelet + `\pods\` + lcPodUID}

// cleanLifecycleTrees removes lifecycleTrees from the Wine disk.
func cleanLifecycleTrees(t *testing.T, p *prefix) {
	for _, dir := range lifecycleTrees {
		if err := os.RemoveAll(p.path(dir)); err != nil {
			t.Error(err)
		}
	}
}

// hookKey is a call of a driver's phase before which the replay changes the
// Wine disk as the driver's own process, or a real node, would have.
type hookKey struct {
	driver, phase string
	call          int
}

// lifecycleHooks are those changes.
var lifecycleHooks = map[hookKey]struct {
	what string
	dir  string
}{
	// NewSmbGlobalMapping made the staging path a link to the share in the
	// fixture only: a folder on the Wine disk stands in for it, as the
	// filesystem group works on the disk.
	{"smb", "publish", 0}: {"a folder stands in for the mapping's link at the staging path", lcSMBStaging},
	// The driver's os.MkdirAll of the publish path, after PathExists
	// answered false.
	{"smb", "publish", 1}: {"the driver makes the publish path", lcPublish},
}

// phaseStats is what one phase did.
type phaseStats struct {
	driver, phase       string
	calls, starts       int
	queries             int      // WMI queries and Gets
	methods             []string // WMI methods, Class.Method
	inMemory, toWine    int
	wineFuncs, memFuncs map[string]int
}

// TestLifecycle replays one pod's volume lifecycle of each driver in
// lifecycles through the CSI Proxy client and the agent's pipes, with the
// disk, volume and link calls and the WMI calls answered by the fixture
// build, and checks per phase: every answer the recorded path needs, the
// processes the agent created as Wine traced them (none in any phase: no
// powershell.exe, nor anything else), the WMI methods the phase called, and
// an audit record with the result of every call.
func TestLifecycle(t *testing.T) {
	p := need(t)
	var table []phaseStats
	for _, lc := range lifecycles {
		t.Run(lc.driver, func(t *testing.T) {
			table = append(table, replayLifecycle(t, p, lc)...)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-10s %5s %9s %11s %8s %9s  %s\n", "driver", "phase", "calls", "processes", "wmi-queries", "win32mem", "win32wine", "wmi methods")
	for _, s := range table {
		fmt.Fprintf(&b, "%-10s %-10s %5d %9d %11d %8d %9d  %s\n", s.driver, s.phase, s.calls, s.starts, s.queries, s.inMemory, s.toWine, strings.Join(s.methods, ", "))
	}
	t.Logf("per phase: CSI Proxy calls, processes the agent created, WMI queries, Win32 calls answered by the fixture in memory and passed to Wine, WMI methods called\n%s", b.String())
}

// replayLifecycle runs one driver's phases on a fresh fixture agent.
func replayLifecycle(t *testing.T, p *prefix, lc lifecycle) []phaseStats {
	cleanLifecycleTrees(t, p)
	t.Cleanup(func() { cleanLifecycleTrees(t, p) })
	for _, dir := range lifecycleDirs(lc.driver) {
		if err := os.MkdirAll(p.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The share is not mapped yet: the agent maps it.
	a := startFixtureAgent(t, p, lifecycleFixture(t, lc.driver))
	var stats []phaseStats
	var all []call
	var results []result
	for _, ph := range lc.phases {
		want, ok := lifecycleWants[lc.driver][ph.name]
		if !ok || len(want.answers) != len(ph.calls) {
			t.Fatalf("%s %s: %d expected answers for %d calls: update lifecycleWants with lifecycles", lc.driver, ph.name, len(want.answers), len(ph.calls))
		}
		starts, wmis, w32 := len(a.processStarts()), len(a.wmiCalls(t)), len(a.win32Calls(t))
		got := replayPhase(t, p, lc.driver, ph)
		all, results = append(all, ph.calls...), append(results, got...)
		for i, r := range got {
			checkAnswer(t, fmt.Sprintf("%s %s call %d, %s", lc.driver, ph.name, i, ph.calls[i]), r, want.answers[i])
		}
		s := phaseStats{driver: lc.driver, phase: ph.name, calls: len(ph.calls), memFuncs: map[string]int{}, wineFuncs: map[string]int{}}
		s.starts = len(a.processStarts()) - starts
		for _, c := range a.wmiCalls(t)[wmis:] {
			if c.Kind == "call" {
				s.methods = append(s.methods, c.Method)
				if c.Error != "" || c.ReturnValue == nil || *c.ReturnValue != 0 {
					t.Errorf("%s %s: %s on %q answered %v, error %q; want 0", lc.driver, ph.name, c.Method, c.On, c.ReturnValue, c.Error)
				}
			} else {
				s.queries++
			}
		}
		for _, c := range a.win32Calls(t)[w32:] {
			if c.To == "wine" {
				s.toWine++
				s.wineFuncs[fmt.Sprintf("%s %s (%s)", c.Func, c.Path, c.Error)]++
				checkWineCall(t, lc.driver, ph.name, c)
			} else {
				s.memFuncs[c.Func]++
			}
		}
		// A call passed on to Wine has two lines, the agent's and Wine's.
		s.inMemory = len(a.win32Calls(t)[w32:]) - 2*s.toWine
		t.Logf("%s %s: Win32 calls the agent made %v; of them passed on to Wine: %v", lc.driver, ph.name, s.memFuncs, s.wineFuncs)
		checkPhase(t, s, want, a.processStarts()[starts:])
		if ph.name == "publish" {
			t.Logf("%s publish: after CreateSymlink, the publish path on the Wine disk is %s", lc.driver, describePath(p.path(lcPublish)))
		}
		stats = append(stats, s)
	}
	checkAudited(t, a, all, results)
	// The agent's shutdown creates no process either.
	if err := a.stop(t); err != nil {
		t.Errorf("%s: pipeguard-agent-fixture.exe: %v", lc.driver, err)
	}
	// The share's password reached WMI only as Create's Credential.
	if bytes.Contains(a.wmiLog(t), []byte(lcSMBPassword)) || strings.Contains(a.log.String()+a.trace.String(), lcSMBPassword) {
		t.Errorf("%s: the SMB password appears in the WMI call log or the agent's output", lc.driver)
	}
	a.checkNoProcess(t) // over the lifecycle and its shutdown
	return stats
}

// checkWineCall fails the test for a Win32 call about the lifecycle's
// disk, volume or paths that the fixture passed on to Wine: those are the
// calls Wine cannot answer as a node would, which the fixture must.
func checkWineCall(t *testing.T, driver, phase string, c win32Call) {
	t.Helper()
	path := strings.ToLower(c.Path)
	if strings.EqualFold(strings.TrimSuffix(c.Path, `\`), strings.TrimSuffix(lcKubelet, `\`)) {
		// MountVolume asks which volume holds the kubelet directory itself
		// (rule protected-volume): Wine's C: drive answers it, as a node's
		// system drive would.
		return
	}
	for _, mine := range []string{`\\.\physicaldrive`, strings.ToLower(strings.TrimSuffix(lcVolume, `\`)), strings.ToLower(lcKubelet), strings.ToLower(lcShare)} {
		if strings.Contains(path, mine) {
			t.Errorf("%s %s: %s %s went to Wine, not to the fixture (answer: %q)", driver, phase, c.Func, c.Path, c.Error)
		}
	}
}

// describePath says what is at a host path.
func describePath(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return "absent (" + err.Error() + ")"
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return "a link to " + target
	}
	return "a " + fi.Mode().Type().String() + " entry"
}

// replayPhase makes a phase's calls with csiclient.exe, running the hooks
// before the calls they name.
func replayPhase(t *testing.T, p *prefix, driver string, ph phase) []result {
	var out []result
	start := 0
	for i := 0; i <= len(ph.calls); i++ {
		hook, ok := lifecycleHooks[hookKey{driver, ph.name, i}]
		if !ok && i < len(ph.calls) {
			continue
		}
		if i > start {
			out = append(out, calls(t, p, ph.calls[start:i]...)...)
			start = i
		}
		if ok {
			t.Logf("%s %s: before call %d, %s: %s", driver, ph.name, i, hook.what, hook.dir)
			if err := os.MkdirAll(p.path(hook.dir), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// checkAnswer compares an answer with want: a response in JSON for OK, or
// "Code: message fragment" for an error.
func checkAnswer(t *testing.T, what string, r result, want string) {
	t.Helper()
	if !strings.HasPrefix(want, "{") {
		code, fragment, _ := strings.Cut(want, ": ")
		if r.Code != code || !strings.Contains(r.Message, fragment) {
			t.Errorf("%s: %s %q, want %s with %q", what, r.Code, r.Message, code, fragment)
		}
		return
	}
	if r.Code != "OK" {
		t.Errorf("%s: %s %q, want OK %s", what, r.Code, r.Message, want)
		return
	}
	var got, exp any
	resp := r.Response
	if len(resp) == 0 {
		resp = json.RawMessage("{}")
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Errorf("%s: response %s: %v", what, resp, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("%s: expected response %s: %v", what, want, err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("%s: answered %s, want %s", what, resp, want)
	}
}

// checkPhase checks a phase's process creations (none) and WMI methods.
func checkPhase(t *testing.T, s phaseStats, want phaseWant, starts []string) {
	t.Helper()
	if s.starts != 0 {
		t.Errorf("%s %s: the agent created %d processes, want none:\n%s", s.driver, s.phase, s.starts, strings.Join(starts, "\n"))
	}
	if !slices.Equal(s.methods, want.methods) {
		t.Errorf("%s %s: the WMI methods called were %q, want %q", s.driver, s.phase, s.methods, want.methods)
	}
}

// checkAudited checks that the agent audited every call, in order, with
// its method and result.
func checkAudited(t *testing.T, a *agent, cs []call, results []result) {
	t.Helper()
	recs := a.records(t)
	if len(recs) != len(cs) {
		var got []string
		for _, r := range recs {
			got = append(got, r.RequestURI+" "+r.Annotations["pipeguard.io/grpc-code"])
		}
		t.Errorf("%d audit records for %d calls:\n%s", len(recs), len(cs), strings.Join(got, "\n"))
		return
	}
	for i, r := range recs {
		group, version, _ := strings.Cut(cs[i].gv, "/")
		uri := "/" + version + "." + strings.ToUpper(group[:1]) + group[1:] + "/" + cs[i].method
		if r.RequestURI != uri || r.Annotations["pipeguard.io/grpc-code"] != results[i].Code {
			t.Errorf("audit record %d: %s with result %q, want %s with %q", i, r.RequestURI, r.Annotations["pipeguard.io/grpc-code"], uri, results[i].Code)
		}
	}
}

// phaseWant is what a phase must answer and call through WMI.
type phaseWant struct {
	// answers are, per call, the response in JSON (protojson leaves out
	// false, 0 and empty fields) or "Code: message fragment".
	answers []string
	// methods are the WMI methods the phase calls, in order, as
	// Class.Method.
	methods []string
}

// Answers the recorded paths need (see the comment above each call).
var (
	answerOK      = `{}`
	answerExists  = `{"exists":true}`
	answerVolume  = `{"volumeId":` + quote(lcVolume) + `}`
	answerVolumes = `{"volumeIds":[` + quote(lcVolume) + `]}`
	answerStats   = fmt.Sprintf(`{"totalBytes":"%d","usedBytes":"%d"}`, lcTotal, lcTotal-lcFree)
	answerDiskIDs = fmt.Sprintf(`{"diskIDs":{"%d":{"page83":%s,"serialNumber":"lc-serial"}}}`, lcDisk, quote("Google "+lcPV))
	answerLoc     = fmt.Sprintf(`{"diskLocations":{"%d":{"Adapter":"0","Target":"0","LUNID":%s}}}`, lcDisk, quote(lcLUN))
)

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The WMI methods of PartitionDisk on a new disk, as CSI Proxy calls them.
var partitionMethods = []string{"MSFT_Disk.Initialize", "MSFT_Disk.CreatePartition", "MSFT_Disk.Refresh", "MSFT_Partition.Online"}

// lifecycleWants are, per driver and phase, the answers and WMI methods
// of the recorded path, call for call with lifecycles.
var lifecycleWants = map[string]map[string]phaseWant{
	"azuredisk": {
		"stage": {
			answers: []string{answerOK, answerLoc, answerExists, answerOK, answerOK, answerVolumes, answerOK, answerOK, answerOK},
			methods: slices.Concat([]string{"MSFT_StorageSetting.UpdateHostStorageCache"}, partitionMethods, []string{"MSFT_Volume.Format"}),
		},
		"publish":   {answers: []string{answerOK, answerOK, answerOK}},
		"stats":     {answers: []string{answerVolume, answerStats}},
		"unpublish": {answers: []string{answerVolume, answerOK, answerOK}},
		"unstage":   {answers: []string{answerVolume, answerOK, answerOK}},
	},
	"gce-pd": {
		"stage": {
			answers: []string{answerDiskIDs, answerOK, answerOK, answerOK, answerVolumes, answerOK, answerOK, answerOK, answerVolume, answerOK},
			// SetDiskState online finds the disk online and calls nothing;
			// ResizeVolume to the largest size finds the partition there.
			methods: slices.Concat(partitionMethods, []string{"MSFT_Volume.Format", "MSFT_Partition.GetSupportedSize"}),
		},
		// IsSymlink of the publish path, which does not exist yet, fails
		// as the recorded path allows: the driver goes on either way.
		"publish":   {answers: []string{`Unknown: statat ` + lcPublish + `: `, answerOK, answerOK}},
		"stats":     {answers: []string{answerVolume, answerStats}},
		"unpublish": {answers: []string{answerOK}},
		"unstage": {
			answers: []string{answerExists, answerVolume, answerOK, answerOK, fmt.Sprintf(`{"diskNumber":%d}`, lcDisk), answerOK, answerDiskIDs},
			methods: []string{"MSFT_Disk.Offline"},
		},
	},
	"smb": {
		"stage": {
			answers: []string{answerExists, answerOK, answerExists, answerOK, answerExists, answerOK},
			methods: []string{"MSFT_SmbGlobalMapping.Create"},
		},
		"publish":   {answers: []string{answerOK, answerExists, answerOK, answerOK}},
		"stats":     {answers: []string{}},
		"unpublish": {answers: []string{answerOK}},
		"unstage":   {answers: []string{answerOK, answerOK}, methods: []string{"MSFT_SmbGlobalMapping.Remove"}},
	},
}
