package app

import (
	"context"
	"strings"
	"testing"
	"time"

	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"

	"github.com/pipeguard/pipeguard/agent/guard"
	hostvol "github.com/pipeguard/pipeguard/agent/hostops/volume"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/agent/identity"
)

// TestSmbRequestDeadlineThroughTheGuard maps a share whose
// MSFT_SmbGlobalMapping.Create never answers: --host-call-timeout-smb covers the whole
// request (the mapping lookup before it included), which answers
// DeadlineExceeded naming the share and the flag; the next mapping is
// served.
func TestSmbRequestDeadlineThroughTheGuard(t *testing.T) {
	fake := &hangOn{Conn: newHostWMI(), hang: func(_, method string, in []wmi.Param) bool {
		for _, p := range in {
			if s, _ := p.Value.(string); method == "Create" && p.Name == "Credential" && strings.HasPrefix(s, "hung:") {
				return true
			}
		}
		return false
	}}
	const timeout = 300 * time.Millisecond
	g := startGuarded(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, WMI: fake,
		HostCallTimeouts: map[string]time.Duration{"smb": timeout}}, guard.Options{}, nil)
	smb := smbv1.NewSmbClient(g.dial(t, "smb", "v1"))

	start := time.Now()
	_, err := smb.NewSmbGlobalMapping(context.Background(), &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share\pvc-1`, Username: "hung", Password: "p"})
	if took := time.Since(start); took > timeout+10*time.Second {
		t.Fatalf("answered after %v", took)
	}
	wantStatus(t, err, codes.DeadlineExceeded,
		`smb NewSmbGlobalMapping of \\srv\share did not finish within 300ms (host operation deadline, counted for the whole request; --host-call-timeout-smb): mapping \\srv\share: smb MSFT_SmbGlobalMapping.Create did not finish: the request ended first: context deadline exceeded`)
	if _, err := smb.NewSmbGlobalMapping(context.Background(), &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\other\share\pvc-2`, Username: "u", Password: "p"}); err != nil {
		t.Fatalf("another share: %v", err)
	}
}

// TestFormatSlotsNotSplitBetweenCallers: one pod formatting two volumes
// gets both --format-concurrency slots; its other calls keep a share of
// the group's.
func TestFormatSlotsNotSplitBetweenCallers(t *testing.T) {
	g := newFormatGate(8)
	host := hostvol.WMI{Conn: g, Limits: bound(Options{}, "volume")}
	pod := peer.NewContext(context.Background(), &peer.Peer{AuthInfo: identity.AuthInfo{Caller: &identity.Caller{PodUID: "driver", UID: -1, GID: -1}}})
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- host.FormatVolume(pod, volumeID) }()
	}
	<-g.started
	<-g.started
	if n := g.running.Load(); n != 2 {
		t.Fatalf("%d formats of one pod running, want 2", n)
	}
	close(g.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
