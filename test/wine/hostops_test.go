//go:build wine && linux

package wine

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// Request values the host operations below send, each distinctive enough to
// be found in a log, a query or an audit record.
const (
	markVolume  = `\\?\Volume{7e57da7a-0b0e-4c0d-9e11-00000000c0de}\`
	markVolume2 = `\\?\Volume{7e57da7a-0b0e-4c0d-9e11-00000000c0df}\`
	markShare   = `\\pgmark-fileserver\pgmark-share`
	markUser    = `PGMARK\smb-user`
	markSecret  = `pgmark-Secret;$(calc)`
	markService = `pgmark-svc`
	markPortal  = `pgmark-portal.example`
	markIQN     = `iqn.2026-11.example.pgmark:target`
	markCHAP    = `pgmark-chap-secret`
	markDisk    = 4242
	markDisk2   = 4243
	markSize    = 987654321
)

// hostopsFixture is the host of TestHostOperationsStartNoProcess: disk
// markDisk new (raw and offline), its volume markVolume made by the
// partitioning; disk markDisk2 with markVolume2 on a 512 MiB partition of
// its 4 GiB, room to grow; an iSCSI portal, not added yet, whose target's
// connection reaches markDisk2.
func hostopsFixture() map[string]any {
	return map[string]any{
		"disks": []any{
			map[string]any{"number": markDisk, "serial": "pgmark-1", "size": 4 << 30, "partitionStyle": "raw", "offline": true,
				"scsi": map[string]any{"port": 0, "path": 0, "target": 0, "lun": 7}},
			map[string]any{"number": markDisk2, "serial": "pgmark-2", "size": 4 << 30},
		},
		"volumes": []any{
			map[string]any{"id": markVolume, "partition": 1, "total": 4<<30 - 16<<20, "free": 4<<30 - 16<<20,
				"extents": []any{map[string]any{"disk": markDisk, "offset": 16 << 20, "length": 4<<30 - 16<<20}}},
			map[string]any{"id": markVolume2, "partition": 1, "fileSystem": "NTFS", "total": 512 << 20, "free": 500 << 20,
				"extents": []any{map[string]any{"disk": markDisk2, "offset": 1 << 20, "length": 512 << 20}}},
		},
		"iscsiPortals": []any{map[string]any{"address": markPortal, "port": 3260,
			"targets": []any{map[string]any{"iqn": markIQN, "disks": []int{markDisk2}}}}},
	}
}

// wantMethod is a WMI method an operation must reach, on the object it
// names ("" for a static method), with the in-parameters it must carry.
type wantMethod struct {
	method, on string
	params     []string
}

// TestHostOperationsStartNoProcess runs every kind of host operation of
// the disk, volume, SMB, iSCSI and system groups through the pipes with
// the fixture build, and checks: Wine traced no process the agent created
// (none for the whole run and its shutdown); each WMI-backed operation
// reached the WMI fixture as the methods CSI Proxy calls, on the object
// the request named, in order, each answering 0; every request value in a
// query is a WQL literal of wmi.Quote (the fixture's parser fails any
// other); and the SMB password and the CHAP secrets travel only as the
// in-parameters Credential and ChapSecret, absent from the WMI log, the
// agent's output and the audit log.
func TestHostOperationsStartNoProcess(t *testing.T) {
	p := need(t)
	a := startFixtureAgent(t, p, hostopsFixture(), "--allowed-service", markService)
	target, _ := kubelet(p, `pods\0b6c\volumes\kubernetes.io~csi\pv\mount`)
	portal := map[string]any{"targetAddress": markPortal, "targetPort": 3260}
	vol := map[string]any{"volumeId": markVolume}
	disk := map[string]any{"diskNumber": markDisk}
	cs := []call{
		{"disk/v1", "ListDiskLocations", nil},
		{"disk/v1", "ListDiskIDs", nil},
		{"disk/v1", "Rescan", nil},
		{"disk/v1", "SetDiskState", map[string]any{"diskNumber": markDisk, "isOnline": true}},
		{"disk/v1", "GetDiskState", disk},
		{"disk/v1", "PartitionDisk", disk},
		{"disk/v1", "GetDiskStats", disk},
		{"volume/v1", "ListVolumesOnDisk", disk},
		{"volume/v1", "MountVolume", map[string]any{"volumeId": markVolume, "targetPath": target}},
		{"volume/v1", "IsVolumeFormatted", vol},
		{"volume/v1", "FormatVolume", vol},
		{"volume/v1", "ResizeVolume", map[string]any{"volumeId": markVolume2, "sizeBytes": markSize}},
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
		{"disk/v1", "SetDiskState", map[string]any{"diskNumber": markDisk, "isOnline": false}},
		{"system/v1alpha1", "GetBIOSSerialNumber", nil},
		{"system/v1alpha1", "GetService", map[string]any{"name": markService}},
		{"system/v1alpha1", "StartService", map[string]any{"name": markService}},
		{"system/v1alpha1", "StopService", map[string]any{"name": markService}},
	}
	// The operations done through WMI, each of which must succeed.
	wmiBacked := map[string]bool{"Rescan": true, "SetDiskState": true, "GetDiskState": true, "PartitionDisk": true,
		"FormatVolume": true, "ResizeVolume": true, "NewSmbGlobalMapping": true, "RemoveSmbGlobalMapping": true,
		"AddTargetPortal": true, "DiscoverTargetPortal": true, "ConnectTarget": true, "GetTargetDisks": true,
		"DisconnectTarget": true, "RemoveTargetPortal": true, "SetMutualChapSecret": true}
	results := calls(t, p, cs...)
	for i, r := range results {
		switch {
		case wmiBacked[cs[i].method] && r.Code != "OK":
			t.Errorf("%s: %s %q, want OK from the WMI fixture", cs[i], r.Code, r.Message)
		case r.Code == "Dial" || r.Code == "BadInput" || r.Code == "Unimplemented" || r.Code == "Unavailable" || r.Code == "InvalidArgument" || r.Code == "PermissionDenied":
			t.Errorf("%s: %s %q: the call did not reach its host operation", cs[i], r.Code, r.Message)
		}
	}
	for i, r := range results {
		if cs[i].method == "GetTargetDisks" && r.Code == "OK" {
			var got struct {
				DiskIDs []string `json:"diskIDs"`
			}
			if err := json.Unmarshal(r.Response, &got); err != nil || !slices.Equal(got.DiskIDs, []string{"4243"}) {
				t.Errorf("GetTargetDisks answered %s (%v), want the disk of the target's connection, 4243", r.Response, err)
			}
		}
	}

	calls := a.wmiCalls(t)
	want := []wantMethod{
		{"MSFT_StorageSetting.UpdateHostStorageCache", "", nil},
		{"MSFT_Disk.Online", "disk 4242", nil},
		{"MSFT_Disk.Initialize", "disk 4242", []string{"PartitionStyle"}},
		{"MSFT_Disk.CreatePartition", "disk 4242", []string{"UseMaximumSize", "AssignDriveLetter", "GptType", "IsHidden", "IsActive"}},
		{"MSFT_Disk.Refresh", "disk 4242", nil},
		{"MSFT_Partition.Online", "partition 1 of disk 4242", nil},
		{"MSFT_Volume.Format", "volume " + markVolume, []string{"FileSystem", "FileSystemLabel", "Full", "Force"}},
		{"MSFT_Partition.Resize", "partition 1 of disk 4243", []string{"Size"}},
		{"MSFT_Disk.Refresh", "disk 4243", nil},
		{"MSFT_SmbGlobalMapping.Create", "", []string{"RemotePath", "RequirePrivacy", "Credential"}},
		{"MSFT_SmbGlobalMapping.Remove", "mapping " + markShare, []string{"Force"}},
		{"MSFT_iSCSITargetPortal.New", "", []string{"TargetPortalAddress", "TargetPortalPortNumber"}},
		{"MSFT_iSCSITarget.Connect", "", []string{"NodeAddress", "TargetPortalAddress", "TargetPortalPortNumber", "AuthenticationType", "IsPersistent", "ChapUsername", "ChapSecret"}},
		{"MSFT_iSCSITarget.Disconnect", "target " + markIQN, []string{"SessionIdentifier"}},
		{"MSFT_iSCSITargetPortal.Remove", "portal " + markPortal + ":3260", []string{"TargetPortalPortNumber", "TargetPortalAddress"}},
		{"MSFT_iSCSISession.SetCHAPSecret", "", []string{"ChapSecret"}},
		{"MSFT_Disk.Offline", "disk 4242", nil},
	}
	var got []wantMethod
	for _, c := range calls {
		if c.Kind != "call" {
			continue
		}
		got = append(got, wantMethod{c.Method, c.On, c.Params})
		if c.Error != "" || c.ReturnValue == nil || *c.ReturnValue != 0 || c.Held {
			t.Errorf("%s on %q: return value %v, error %q, held %v; want 0", c.Method, c.On, c.ReturnValue, c.Error, c.Held)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the WMI methods the operations reached:\n%s\nwant\n%s", methodList(got), methodList(want))
	}

	// Every request value in a query is a wmi.Quote literal, or in the
	// object path of an ASSOCIATORS OF, a key value as object paths escape
	// it (wmitest.RelPath).
	queried := map[string]bool{}
	for _, c := range calls {
		if c.Kind != "query" {
			continue
		}
		if c.Error != "" {
			t.Errorf("query %q failed in the fixture's strict parser: %s", c.WQL, c.Error)
		}
		for _, m := range []string{markVolume, markVolume2, markShare, markPortal, markIQN} {
			q, err := wmi.Quote(m)
			if err != nil {
				t.Fatal(err)
			}
			key := `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(m) + `"}`
			if rest := strings.ReplaceAll(strings.ReplaceAll(c.WQL, q, ""), key, ""); strings.Contains(rest, m) {
				t.Errorf("query %q holds %q other than as the literal %s or the object path's key %s", c.WQL, m, q, key)
			}
			if strings.Contains(c.WQL, q) {
				queried[m] = true
			}
		}
	}
	for _, m := range []string{markVolume, markVolume2, markShare, markPortal} {
		if !queried[m] {
			t.Errorf("no query looked %q up", m)
		}
	}
	// The disk operations look the disk up by its number, and
	// GetTargetDisks follows the target's connection to its disks.
	for _, q := range []string{"SELECT * FROM MSFT_Disk WHERE Number = 4242", "WHERE AssocClass = MSFT_iSCSIConnectionToDisk ResultClass = MSFT_Disk"} {
		if !slices.ContainsFunc(calls, func(c wmiCall) bool { return c.Kind == "query" && strings.Contains(c.WQL, q) }) {
			t.Errorf("no query holds %q", q)
		}
	}

	// Shut down, so that every line is written, then look for the secrets.
	if err := a.stop(t); err != nil {
		t.Fatalf("pipeguard-agent.exe: %v", err)
	}
	audit, err := os.ReadFile(p.path(a.dir + `\audit.log`))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{markSecret, markCHAP} {
		for where, text := range map[string]string{"the WMI fixture's call log": string(a.wmiLog(t)), "the agent's output": a.log.String(),
			"Wine's trace of the agent": a.trace.String(), "the audit log": string(audit)} {
			if strings.Contains(text, secret) {
				t.Errorf("the secret %q appears in %s", secret, where)
			}
		}
	}
	a.checkNoProcess(t)
	t.Logf("%d host operations, %d WMI queries and %d WMI method calls in the agent's process, %d processes created",
		len(cs), len(calls)-len(got), len(got), len(a.processStarts()))
}

// methodList lays out methods one a line.
func methodList(ms []wantMethod) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("  " + m.method)
		if m.on != "" {
			b.WriteString(" on " + m.on)
		}
		b.WriteString(" (" + strings.Join(m.params, ", ") + ")\n")
	}
	return b.String()
}

// TestProcessTraceSeesAStart checks the count the tests make of the
// agent's processes against a program that does create one: cmd.exe
// running hostname.exe, with the agent's WINEDEBUG. Wine's trace of that
// creation is a line processStarts counts, so a count of 0 for the agent
// is Wine saying it created none, not a trace the count cannot read.
func TestProcessTraceSeesAStart(t *testing.T) {
	p := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := p.command(ctx, "cmd.exe", "/c", "hostname.exe")
	cmd.Env = append(cmd.Env, processTrace)
	out, trace := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, &traceSplitter{log: out, trace: trace}
	if err := cmd.Run(); err != nil {
		t.Fatalf("cmd.exe /c hostname.exe: %v\n%s", err, out.String())
	}
	var hostname []string
	for _, line := range processStarts(trace.String()) {
		if strings.Contains(strings.ToLower(line), "hostname.exe") {
			hostname = append(hostname, line)
		}
	}
	if len(hostname) != 1 {
		t.Fatalf("%d traced creations of hostname.exe, want 1; the trace:\n%s", len(hostname), trace.String())
	}
	if strings.Contains(out.String(), ":trace:") {
		t.Fatalf("a trace line was kept in the program's output:\n%s", out.String())
	}
	t.Logf("traced: %s", hostname[0])
}
