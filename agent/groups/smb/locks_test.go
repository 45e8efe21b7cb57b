package smb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/confine"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// hangingShare is a WMI connection to a host whose shares are all
// unmapped and where MSFT_SmbGlobalMapping.Create of the share hung never
// returns before its context ends; every Create reaching the host sends
// its remote path on reached.
type hangingShare struct {
	wmi.Conn
	hung    string
	reached chan string
}

func (h *hangingShare) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	if path != wmitest.ClassSmbGlobalMapping || method != "Create" {
		return h.Conn.Call(ctx, ns, path, method, in...)
	}
	var remote string
	for _, p := range in {
		if p.Name == "RemotePath" {
			remote, _ = p.Value.(string)
		}
	}
	h.reached <- remote
	if strings.EqualFold(remote, h.hung) {
		<-ctx.Done()
		return wmi.Object{}, ctx.Err()
	}
	return h.Conn.Call(ctx, ns, path, method, in...)
}

func hangingServer(t *testing.T, hung string, deadline time.Duration) (*Server, *hangingShare) {
	t.Helper()
	p := wmitest.New()
	wmitest.AddSMB(p)
	h := &hangingShare{Conn: p, hung: hung, reached: make(chan string, 16)}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nativeHost(t, hostsmb.Deps{Sys: win32test.New(), Cmdlets: hostsmb.WMI{Conn: h}}), conf, true)
	if err != nil {
		t.Fatal(err)
	}
	return s.WithDeadline(deadline, "--host-call-timeout-smb"), h
}

// The attack: a share whose mapping hangs. A driver mapping another,
// healthy share reaches its host call and is served; a second mapping of
// the hung share waits for its lock only until its deadline, and never
// reaches the host.
func TestMappingAHealthyShareIsNotHeldByAHungOne(t *testing.T) {
	s, h := hangingServer(t, `\\hung\share`, time.Hour)
	hungCtx, stop := context.WithCancel(context.Background())
	hung := make(chan error, 1)
	go func() { hung <- s.NewSmbGlobalMapping(hungCtx, `\\hung\share\pvc-1`, "", `DOM\u`, "p") }()
	if r := <-h.reached; r != `\\hung\share` {
		t.Fatalf("reached %s first", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.NewSmbGlobalMapping(ctx, `\\healthy\share\pvc-2`, "", `DOM\u`, "p"); err != nil {
		t.Fatalf("the healthy share: %v", err)
	}
	if r := <-h.reached; r != `\\healthy\share` {
		t.Fatalf("reached %s, want the healthy share", r)
	}

	// The same share, in another case: one lock. (The hung request read
	// the deadline before it reached the host.)
	s.WithDeadline(100*time.Millisecond, "--host-call-timeout-smb")
	err := s.NewSmbGlobalMapping(context.Background(), `\\HUNG\share\pvc-3`, "", `DOM\u`, "p")
	want := `smb NewSmbGlobalMapping of \\HUNG\share did not start within 100ms: another mapping change of the same share held its lock all that time, so it was not run (host operation deadline, counted for the whole request; --host-call-timeout-smb): context deadline exceeded`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	stop()
	<-hung
	if len(h.reached) != 0 {
		t.Fatalf("%d more mappings reached the host", len(h.reached))
	}
}

// One deadline covers the whole request: a mapping that hangs is answered
// at the group's deadline, naming it, and the share's lock is free again.
func TestMappingDeadlineCoversTheWholeRequest(t *testing.T) {
	s, h := hangingServer(t, `\\srv\share`, 100*time.Millisecond)
	err := s.NewSmbGlobalMapping(context.Background(), `\\srv\share\pvc-1`, "", `DOM\u`, "p")
	want := `smb NewSmbGlobalMapping of \\srv\share did not finish within 100ms (host operation deadline, counted for the whole request; --host-call-timeout-smb): mapping \\srv\share: context deadline exceeded`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v\nwant %q", err, want)
	}
	<-h.reached
	s.locks.mu.Lock()
	n := len(s.locks.m)
	s.locks.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d share locks left after the request", n)
	}
}
