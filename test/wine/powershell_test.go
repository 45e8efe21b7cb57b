//go:build wine && linux

package wine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

// Request values the host operations below send, each distinctive enough to
// be found in a command line or an environment.
const (
	markVolume  = `\\?\Volume{7e57da7a-0b0e-4c0d-9e11-00000000c0de}\`
	markShare   = `\\pgmark-fileserver\pgmark-share`
	markUser    = `PGMARK\smb-user`
	markSecret  = `pgmark-Secret;$(calc)`
	markService = `pgmark-svc`
	markPortal  = `pgmark-portal.example`
	markIQN     = `iqn.2026-11.example.pgmark:target`
	markCHAP    = `pgmark-chap-secret`
	markDisk    = 4242
	markSize    = 987654321
)

// TestPowerShellThroughWindowsProcesses runs every kind of host operation
// through the PowerShell workers, started by real Windows process creation
// of the PowerShell stand-in: PowerShell starts by its full path with the
// constant bootstrap intact, at most --powershell-workers times for the
// whole run; no request value ever appears in a command line or a worker's
// environment; every value reaches its script as request data; the
// scripts find every variable they read; and at shutdown the agent stops
// its workers.
func TestPowerShellThroughWindowsProcesses(t *testing.T) {
	p := need(t)
	const workers = 2
	a := startAgent(t, p, "--allowed-service", markService, "--powershell-workers", fmt.Sprint(workers))
	a.answers(t,
		"Get-Disk | Select-Object Number, Location", `[{"Number":4242,"Location":"PCIROOT(0)"}]`,
		"Get-Disk | Select-Object Number, UniqueId", `[{"Number":4242,"UniqueId":"pgmark","SerialNumber":"s"}]`,
		"Win32_BIOS", "SN-0001",
		"FileSystemType", "NTFS",
		"Get-Service", `{"DisplayName":"pgmark","StartType":2,"Status":4}`,
	)
	target, _ := kubelet(p, `pods\0b6c\volumes\kubernetes.io~csi\pv\mount`)
	portal := map[string]any{"targetAddress": markPortal, "targetPort": 3260}
	vol := map[string]any{"volumeId": markVolume}
	disk := map[string]any{"diskNumber": markDisk}
	cs := []call{
		{"disk/v1", "ListDiskLocations", nil},
		{"disk/v1", "ListDiskIDs", nil},
		{"disk/v1", "PartitionDisk", disk},
		{"disk/v1", "Rescan", nil},
		{"disk/v1", "GetDiskStats", disk},
		{"disk/v1", "SetDiskState", map[string]any{"diskNumber": markDisk, "isOnline": true}},
		{"disk/v1", "GetDiskState", disk},
		{"volume/v1", "ListVolumesOnDisk", map[string]any{"diskNumber": markDisk}},
		{"volume/v1", "MountVolume", map[string]any{"volumeId": markVolume, "targetPath": target}},
		{"volume/v1", "IsVolumeFormatted", vol},
		{"volume/v1", "FormatVolume", vol},
		{"volume/v1", "ResizeVolume", map[string]any{"volumeId": markVolume, "sizeBytes": markSize}},
		{"volume/v1", "GetVolumeStats", vol},
		{"volume/v1", "GetDiskNumberFromVolumeID", vol},
		{"volume/v1", "WriteVolumeCache", vol},
		{"volume/v1", "UnmountVolume", map[string]any{"volumeId": markVolume, "targetPath": target}},
		{"smb/v1", "NewSmbGlobalMapping", map[string]any{"remotePath": markShare, "username": markUser, "password": markSecret}},
		{"smb/v1", "RemoveSmbGlobalMapping", map[string]any{"remotePath": markShare}},
		{"iscsi/v1alpha2", "AddTargetPortal", map[string]any{"targetPortal": portal}},
		{"iscsi/v1alpha2", "DiscoverTargetPortal", map[string]any{"targetPortal": portal}},
		{"iscsi/v1alpha2", "ConnectTarget", map[string]any{"targetPortal": portal, "iqn": markIQN, "authType": "ONE_WAY_CHAP", "chapUsername": markUser, "chapSecret": markCHAP}},
		{"iscsi/v1alpha2", "GetTargetDisks", map[string]any{"targetPortal": portal, "iqn": markIQN}},
		{"iscsi/v1alpha2", "DisconnectTarget", map[string]any{"targetPortal": portal, "iqn": markIQN}},
		{"iscsi/v1alpha2", "RemoveTargetPortal", map[string]any{"targetPortal": portal}},
		{"iscsi/v1alpha2", "SetMutualChapSecret", map[string]any{"MutualChapSecret": markCHAP}},
		{"system/v1alpha1", "GetBIOSSerialNumber", nil},
		{"system/v1alpha1", "GetService", map[string]any{"name": markService}},
		{"system/v1alpha1", "StartService", map[string]any{"name": markService}},
		{"system/v1alpha1", "StopService", map[string]any{"name": markService}},
	}
	results := calls(t, p, cs...)
	for i, r := range results {
		switch r.Code {
		case "Dial", "BadInput", "Unimplemented", "Unavailable", "InvalidArgument", "PermissionDenied":
			t.Errorf("%s: %s %q: the call did not reach its host operation", cs[i], r.Code, r.Message)
		}
	}
	// Every value above; those of the calls only cmdlets can make must
	// reach a script (the others may be served by Win32 calls instead).
	marks := []string{markVolume, markShare, markUser, markSecret, markService, markPortal, markIQN, markCHAP, "4242", "987654321"}
	cmdletMarks := []string{markVolume, markShare, markUser, markSecret, markPortal, markIQN, markCHAP, "4242", "987654321"}

	starts := a.powershellStarts(t)
	if len(starts) == 0 || len(starts) > workers {
		t.Errorf("PowerShell started %d times for the whole run, want 1 to %d (--powershell-workers)", len(starts), workers)
	}
	for _, s := range starts {
		if s.Kind != "start" {
			t.Errorf("a one-off PowerShell ran %q: every script must go through a worker", s.Script)
			continue
		}
		if s.Script != runner.WorkerBootstrap {
			t.Errorf("the worker's -Command arrived as\n%q\nwant the bootstrap intact\n%q", s.Script, runner.WorkerBootstrap)
		}
		for _, m := range marks {
			if strings.Contains(s.CommandLine, m) {
				t.Errorf("request value %q appears in the command line %q", m, s.CommandLine)
			}
			for k, v := range s.Env {
				if strings.Contains(v, m) {
					t.Errorf("request value %q appears in the worker's environment: %s=%q", m, k, v)
				}
			}
		}
		if !strings.HasPrefix(strings.ToLower(s.CommandLine), `"c:\windows\system32\windowspowershell\v1.0\powershell.exe"`) &&
			!strings.HasPrefix(strings.ToLower(s.CommandLine), `c:\windows\system32\windowspowershell\v1.0\powershell.exe`) {
			t.Errorf("PowerShell started as %q, want the full path in the system directory", s.CommandLine)
		}
	}

	requests := a.powershellRequests(t)
	if len(requests) == 0 {
		t.Fatal("no script ran in a worker")
	}
	asData := map[string]bool{}
	for _, r := range requests {
		if len(r.Missing) > 0 {
			t.Errorf("script %q reads unset variables %v", r.Script, r.Missing)
		}
		for _, m := range marks {
			if strings.Contains(r.Script, m) {
				t.Errorf("request value %q appears in the script text %q", m, r.Script)
			}
			for _, v := range r.Values {
				if strings.Contains(v, m) {
					asData[m] = true
				}
			}
		}
	}
	for _, m := range cmdletMarks {
		if !asData[m] {
			t.Errorf("request value %q reached no script as request data", m)
		}
	}
	// At shutdown the agent closes every worker's input, and each ends.
	if err := a.stop(t); err != nil {
		t.Fatalf("pipeguard-agent.exe: %v", err)
	}
	exits := map[int]bool{}
	for _, e := range a.powershellEntries(t, "exit") {
		exits[e.PID] = true
	}
	for _, s := range starts {
		if !exits[s.PID] {
			t.Errorf("worker %d was not told to stop when the agent shut down", s.PID)
		}
	}
	t.Logf("%d host operations, %d scripts run by %d PowerShell workers", len(cs), len(requests), len(starts))
}
