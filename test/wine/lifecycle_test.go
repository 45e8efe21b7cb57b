//go:build wine && linux

package wine

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The lifecycles of lifecycle_calls_test.go replayed against an agent built
// with -tags wine, whose Win32 calls go to a fixture (the disks, volumes,
// mount points and links Wine has none of) and on to Wine for the rest.
// The filesystem group, the pipes, the guard, the audit log and the
// PowerShell workers (the stand-in) are the real ones.

// lcTotal and lcFree are the fixture volume's size and free bytes.
const (
	lcTotal = 10 << 30
	lcFree  = 9 << 30
)

// lifecycleFixture is the host the driver's recorded path needs (see the
// top of lifecycle_calls_test.go): the disk, the one volume on it, still
// unformatted, and the publish path a link to the staging path.
func lifecycleFixture(t *testing.T, driver string) map[string]any {
	lun, err := strconv.Atoi(lcLUN)
	if err != nil {
		t.Fatal(err)
	}
	disk := map[string]any{"number": lcDisk, "serial": "lc-serial", "size": lcTotal + 16<<20}
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

// cmdletFragments name the worker requests by a fragment of their script,
// the first found.
var cmdletFragments = []string{
	"Format-Volume", "Resize-Partition", "New-Partition", "Set-Disk", "Update-HostStorageCache",
	"Get-SmbGlobalMapping", "New-SmbGlobalMapping", "Remove-SmbGlobalMapping",
}

// cmdletOf names a worker request's script.
func cmdletOf(script string) string {
	for _, f := range cmdletFragments {
		if strings.Contains(script, f) {
			return f
		}
	}
	return "unknown script: " + script
}

// phaseStats is what one phase did.
type phaseStats struct {
	driver, phase       string
	calls, starts       int
	requests            []string
	inMemory, toWine    int
	wineFuncs, memFuncs map[string]int
}

// TestLifecycle replays one pod's volume lifecycle of each driver in
// lifecycles through the CSI Proxy client and the agent's pipes, with the
// disk, volume and link calls answered by the fixture build, and checks per
// phase: every answer the recorded path needs, the PowerShell processes
// started (one worker for the whole lifecycle, started in stage; none in
// stats, unpublish or unstage), the cmdlet requests the worker served, and
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
	fmt.Fprintf(&b, "%-10s %-10s %5s %6s %9s %9s  %s\n", "driver", "phase", "calls", "starts", "win32mem", "win32wine", "worker requests")
	for _, s := range table {
		fmt.Fprintf(&b, "%-10s %-10s %5d %6d %9d %9d  %s\n", s.driver, s.phase, s.calls, s.starts, s.inMemory, s.toWine, strings.Join(s.requests, ", "))
	}
	t.Logf("per phase: CSI Proxy calls, PowerShell process starts, Win32 calls answered by the fixture in memory and passed to Wine, cmdlet requests the worker served\n%s", b.String())
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
	a := startFixtureAgent(t, p, lifecycleFixture(t, lc.driver), "--powershell-workers", "1")
	// The share is not mapped yet: the agent maps it.
	a.answers(t, "Get-SmbGlobalMapping", "false")
	var stats []phaseStats
	var worker int // the PowerShell worker's process id, once started
	var all []call
	var results []result
	for _, ph := range lc.phases {
		want, ok := lifecycleWants[lc.driver][ph.name]
		if !ok || len(want.answers) != len(ph.calls) {
			t.Fatalf("%s %s: %d expected answers for %d calls: update lifecycleWants with lifecycles", lc.driver, ph.name, len(want.answers), len(ph.calls))
		}
		starts, requests, w32 := len(a.powershellStarts(t)), len(a.powershellRequests(t)), len(a.win32Calls(t))
		got := replayPhase(t, p, lc.driver, ph)
		all, results = append(all, ph.calls...), append(results, got...)
		for i, r := range got {
			checkAnswer(t, fmt.Sprintf("%s %s call %d, %s", lc.driver, ph.name, i, ph.calls[i]), r, want.answers[i])
		}
		s := phaseStats{driver: lc.driver, phase: ph.name, calls: len(ph.calls), memFuncs: map[string]int{}, wineFuncs: map[string]int{}}
		s.starts = len(a.powershellStarts(t)) - starts
		reqs := a.powershellRequests(t)[requests:]
		for _, r := range reqs {
			s.requests = append(s.requests, cmdletOf(r.Script))
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
		if started := a.powershellStarts(t); worker == 0 && len(started) > 0 {
			worker = started[0].PID
		}
		checkPhase(t, s, reqs, want, worker)
		if ph.name == "publish" {
			t.Logf("%s publish: after CreateSymlink, the publish path on the Wine disk is %s", lc.driver, describePath(p.path(lcPublish)))
		}
		stats = append(stats, s)
	}
	total := 0
	for _, s := range stats {
		total += s.starts
	}
	if total > 1 {
		t.Errorf("%s: PowerShell started %d times over the lifecycle, want at most 1 (one long-lived worker)", lc.driver, total)
	}
	checkAudited(t, a, all, results)
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

// checkPhase checks a phase's process starts and worker requests, which
// the worker whose process id is worker must have served.
func checkPhase(t *testing.T, s phaseStats, reqs []standinRun, want phaseWant, worker int) {
	t.Helper()
	wantStarts := 0
	if s.phase == "stage" {
		wantStarts = 1 // the first cmdlet of the lifecycle starts the worker
	}
	if s.starts != wantStarts {
		t.Errorf("%s %s: %d PowerShell process starts, want %d", s.driver, s.phase, s.starts, wantStarts)
	}
	var cmdlets []string
	for _, w := range want.requests {
		cmdlets = append(cmdlets, w.cmdlet)
	}
	if !reflect.DeepEqual(s.requests, cmdlets) {
		t.Errorf("%s %s: the worker served %q, want %q", s.driver, s.phase, s.requests, cmdlets)
		return
	}
	for i, w := range want.requests {
		if reqs[i].PID != worker {
			t.Errorf("%s %s: %s ran in PowerShell process %d, not in the worker started first (%d)", s.driver, s.phase, w.cmdlet, reqs[i].PID, worker)
		}
		for k, v := range w.values {
			if got := reqs[i].Values[k]; got != v {
				t.Errorf("%s %s: %s request value %s = %q, want %q", s.driver, s.phase, w.cmdlet, k, got, v)
			}
		}
	}
	if s.phase != "stage" && len(reqs) > 0 && s.starts == 0 {
		t.Logf("%s %s: %d cmdlet request(s) served by the running worker, no new process: %q", s.driver, s.phase, len(reqs), s.requests)
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

// phaseWant is what a phase must answer and send to the worker.
type phaseWant struct {
	// answers are, per call, the response in JSON (protojson leaves out
	// false, 0 and empty fields) or "Code: message fragment".
	answers []string
	// requests are the cmdlets the worker serves, in order, with values
	// they must carry.
	requests []cmdletRequest
}

type cmdletRequest struct {
	cmdlet string
	values map[string]string
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

var (
	diskValues   = map[string]string{"disknumber": strconv.Itoa(lcDisk)}
	volumeValues = map[string]string{"volumeid": lcVolume}
	shareValues  = map[string]string{"smbremotepath": lcShare}
)

// lifecycleWants are, per driver and phase, the answers and worker
// requests of the recorded path, call for call with lifecycles.
var lifecycleWants = map[string]map[string]phaseWant{
	"azuredisk": {
		"stage": {
			answers:  []string{answerOK, answerLoc, answerExists, answerOK, answerOK, answerVolumes, answerOK, answerOK, answerOK},
			requests: []cmdletRequest{{"Update-HostStorageCache", nil}, {"New-Partition", diskValues}, {"Format-Volume", volumeValues}},
		},
		"publish":   {answers: []string{answerOK, answerOK, answerOK}},
		"stats":     {answers: []string{answerVolume, answerStats}},
		"unpublish": {answers: []string{answerVolume, answerOK, answerOK}},
		"unstage":   {answers: []string{answerVolume, answerOK, answerOK}},
	},
	"gce-pd": {
		"stage": {
			answers: []string{answerDiskIDs, answerOK, answerOK, answerOK, answerVolumes, answerOK, answerOK, answerOK, answerVolume, answerOK},
			requests: []cmdletRequest{{"New-Partition", diskValues}, {"Set-Disk", map[string]string{"disknumber": strconv.Itoa(lcDisk), "diskoffline": "false"}},
				{"Format-Volume", volumeValues}, {"Resize-Partition", map[string]string{"volumeid": lcVolume, "sizebytes": "0"}}},
		},
		// IsSymlink of the publish path, which does not exist yet, fails
		// as the recorded path allows: the driver goes on either way.
		"publish":   {answers: []string{`Unknown: statat ` + lcPublish + `: `, answerOK, answerOK}},
		"stats":     {answers: []string{answerVolume, answerStats}},
		"unpublish": {answers: []string{answerOK}},
		"unstage": {
			answers:  []string{answerExists, answerVolume, answerOK, answerOK, fmt.Sprintf(`{"diskNumber":%d}`, lcDisk), answerOK, answerDiskIDs},
			requests: []cmdletRequest{{"Set-Disk", map[string]string{"disknumber": strconv.Itoa(lcDisk), "diskoffline": "true"}}},
		},
	},
	"smb": {
		"stage": {
			answers:  []string{answerExists, answerOK, answerExists, answerOK, answerExists, answerOK},
			requests: []cmdletRequest{{"Get-SmbGlobalMapping", shareValues}, {"New-SmbGlobalMapping", map[string]string{"smbremotepath": lcShare, "smbuser": lcSMBUser}}},
		},
		"publish":   {answers: []string{answerOK, answerExists, answerOK, answerOK}},
		"stats":     {answers: []string{}},
		"unpublish": {answers: []string{answerOK}},
		"unstage":   {answers: []string{answerOK, answerOK}, requests: []cmdletRequest{{"Remove-SmbGlobalMapping", shareValues}}},
	},
}
