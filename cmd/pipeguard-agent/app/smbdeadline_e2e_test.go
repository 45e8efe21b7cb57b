package app

import (
	"context"
	"testing"
	"time"

	smbv1 "github.com/kubernetes-csi/csi-proxy/client/api/smb/v1"
	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/agent/guard"
)

// TestSmbRequestDeadlineThroughTheGuard maps a share whose
// New-SmbGlobalMapping never ends: --host-call-timeout-smb covers the whole
// request (the mapping lookup before it included), which answers
// DeadlineExceeded naming the share and the flag; the next mapping is
// served.
func TestSmbRequestDeadlineThroughTheGuard(t *testing.T) {
	fake := &hangOn{hang: "smbuser=hung"}
	const timeout = 300 * time.Millisecond
	g := startGuarded(t, Options{GOOS: "windows", KubeletPath: `C:\var\lib\kubelet`, Filesystem: &fakeFS{}, Runner: fake,
		HostCallTimeouts: map[string]time.Duration{"smb": timeout}}, guard.Options{}, nil)
	smb := smbv1.NewSmbClient(g.dial(t, "smb", "v1"))

	start := time.Now()
	_, err := smb.NewSmbGlobalMapping(context.Background(), &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\srv\share\pvc-1`, Username: "hung", Password: "p"})
	if took := time.Since(start); took > timeout+10*time.Second {
		t.Fatalf("answered after %v", took)
	}
	wantStatus(t, err, codes.DeadlineExceeded,
		`smb NewSmbGlobalMapping of \\srv\share did not finish within 300ms (host operation deadline, counted for the whole request; --host-call-timeout-smb): New-SmbGlobalMapping failed:`)
	if _, err := smb.NewSmbGlobalMapping(context.Background(), &smbv1.NewSmbGlobalMappingRequest{RemotePath: `\\other\share\pvc-2`, Username: "u", Password: "p"}); err != nil {
		t.Fatalf("another share: %v", err)
	}
}
