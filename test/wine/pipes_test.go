//go:build wine && linux

package wine

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// pipeSMBVersions are the smb API versions; each removes a mapping of its
// own, pipeShare.
var pipeSMBVersions = []string{"v1", "v1alpha1", "v1beta1", "v1beta2"}

func pipeShare(version string) string { return `\\fileserver\share-` + version }

// pipesFixture is the host of TestEveryPipeAnswers: a target portal, and a
// global mapping for each smb version to remove.
func pipesFixture() map[string]any {
	var mappings []any
	for _, v := range pipeSMBVersions {
		mappings = append(mappings, map[string]any{"remotePath": pipeShare(v)})
	}
	return map[string]any{"smbMappings": mappings,
		"iscsiPortals": []any{map[string]any{"address": "10.0.0.5", "port": 3260, "added": true}}}
}

// pipeCalls are one harmless call per API group version, all 23 that CSI
// Proxy v1.3.0's client library knows.
func pipeCalls() []call {
	var cs []call
	kubeletRoot := map[string]any{"path": `C:\var\lib\kubelet`}
	for _, v := range []string{"v1", "v1alpha1", "v1beta1", "v1beta2", "v1beta3"} {
		cs = append(cs, call{"disk/" + v, "ListDiskLocations", nil})
	}
	for _, v := range []string{"v1", "v1alpha1", "v1beta1", "v1beta2", "v2alpha1"} {
		cs = append(cs, call{"filesystem/" + v, "PathExists", kubeletRoot})
	}
	for _, v := range []string{"v1alpha1", "v1alpha2"} {
		cs = append(cs, call{"iscsi/" + v, "ListTargetPortals", nil})
	}
	for _, v := range pipeSMBVersions {
		cs = append(cs, call{"smb/" + v, "RemoveSmbGlobalMapping", map[string]any{"remotePath": pipeShare(v)}})
	}
	cs = append(cs, call{"system/v1alpha1", "GetBIOSSerialNumber", nil})
	// The volumes on disk 0: Win32 calls that Wine answers (its C: lies on
	// no disk, so the list is empty).
	for _, v := range []string{"v1", "v1beta3", "v2alpha1"} {
		cs = append(cs, call{"volume/" + v, "ListVolumesOnDisk", map[string]any{"diskNumber": 0}})
	}
	for _, v := range []string{"v1alpha1", "v1beta1", "v1beta2"} {
		cs = append(cs, call{"volume/" + v, "ListVolumesOnDisk", map[string]any{"diskId": "0"}})
	}
	return cs
}

// TestEveryPipeAnswers calls every group version's pipe with the unmodified
// CSI Proxy client library: each answers, each call is one audit record
// carrying the caller's pid, process start and SID, and the agent creates
// no process.
func TestEveryPipeAnswers(t *testing.T) {
	p := need(t)
	// The fixture build: Wine's WMI service has no iSCSI or SMB classes.
	a := startFixtureAgent(t, p, pipesFixture())
	cs := pipeCalls()
	if len(cs) != 23 {
		t.Fatalf("%d calls, want one per each of the 23 group versions", len(cs))
	}
	results := calls(t, p, cs...)
	for i, r := range results {
		if r.Code != "OK" {
			t.Errorf("%s: %s %q, want OK", cs[i], r.Code, r.Message)
		}
	}
	recs := a.records(t)
	if len(recs) != len(cs) {
		var got []string
		for _, r := range recs {
			got = append(got, r.RequestURI+" "+r.Annotations["pipeguard.io/decision"])
		}
		t.Fatalf("%d request records for %d calls:\n%s", len(recs), len(cs), strings.Join(got, "\n"))
	}
	sid := regexp.MustCompile(`^S-1-5(-\d+)+$`)
	seen := map[string]bool{}
	for _, r := range recs {
		x := r.User.Extra
		one := func(k string) string {
			if len(x[k]) != 1 || x[k][0] == "" {
				t.Errorf("%s: %s = %q, want one value", r.RequestURI, k, x[k])
				return ""
			}
			return x[k][0]
		}
		one("pipeguard.io/pid")
		// Under Wine the impersonation token of the pipe client answers at
		// once, before the agent has read from the pipe.
		if src := one("pipeguard.io/identity-source"); src != "peer; sid: client-token" {
			t.Errorf("%s: identity-source %q, want the SID read from the client's impersonation token", r.RequestURI, src)
		}
		one("pipeguard.io/process-start")
		if s := one("pipeguard.io/sid"); s != "" && !sid.MatchString(s) {
			t.Errorf("%s: sid %q is not a SID", r.RequestURI, s)
		}
		if r.Annotations["pipeguard.io/decision"] != "allow" {
			t.Errorf("%s: decision %q, want allow", r.RequestURI, r.Annotations["pipeguard.io/decision"])
		}
		seen[strings.Join([]string{r.Annotations["pipeguard.io/group"], r.RequestURI}, " ")] = true
	}
	if len(seen) != len(cs) {
		t.Errorf("records name %d distinct calls, want %d: %v", len(seen), len(cs), seen)
	}
	a.checkNoProcess(t)
	t.Logf("%d pipes answered; first record: %s", len(results), fmt.Sprint(recs[0].User.Extra))
}
