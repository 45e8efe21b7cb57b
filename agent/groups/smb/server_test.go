package smb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
	"github.com/pipeguard/pipeguard/agent/hostops/win32/win32test"
)

const (
	shareRoot    = `\\srv\share`
	stagingLocal = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb.csi.k8s.io\0a1b\globalmount`
)

// hostLog records, in order, the cmdlets run and the Win32 calls made.
type hostLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *hostLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

func (l *hostLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// shareServer returns an smb Server whose cmdlets answer that the share is
// mapped, over a fake host where only the paths in reachable exist, and
// the log of what ran: each cmdlet with its environment, each Win32 call
// with its path.
func shareServer(t *testing.T, reachable ...string) (*Server, *hostLog) {
	t.Helper()
	log := &hostLog{}
	f := &runnertest.Fake{Respond: func(c runner.Command) ([]byte, error) {
		op := "?"
		for _, name := range []string{"Get-SmbGlobalMapping", "Remove-SmbGlobalMapping", "New-SmbGlobalMapping"} {
			if strings.Contains(c.Script, name) {
				op = name
				break
			}
		}
		log.add(op + " " + strings.Join(c.Env, " "))
		if op == "Get-SmbGlobalMapping" {
			return []byte("true\r\n"), nil
		}
		return nil, nil
	}}
	host := win32test.New()
	for _, p := range reachable {
		host.AddFile(p)
	}
	host.Before = func(c win32test.Call) error {
		log.add(c.Func + " " + c.Path)
		return nil
	}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(nativeHost(t, hostsmb.Deps{Sys: host, Cmdlets: hostsmb.PowerShell{Runner: f}}), conf, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// ran returns, per command, the cmdlet it runs and its environment.
func ran(f *runnertest.Fake) []string {
	var out []string
	for _, c := range f.Commands() {
		out = append(out, c.Script+" "+strings.Join(c.Env, " "))
	}
	return out
}

// A working mapping of the share is reused when the caller's subdirectory
// does not exist (yet): the liveness probe asks the share root, as CSI
// Proxy does, so the shared mapping is neither removed nor re-made with the
// caller's credentials.
func TestNewSmbGlobalMappingProbesTheShareRootBeforeReusingAMapping(t *testing.T) {
	s, log := shareServer(t, shareRoot)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1\missing`, stagingLocal, `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Get-SmbGlobalMapping smbremotepath=\\srv\share`,
		`GetFileAttributesW \\srv\share`,
		`CreateSymbolicLinkW ` + stagingLocal,
	}
	if got := log.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}

// A mapping whose share root does not answer is replaced.
func TestNewSmbGlobalMappingReplacesAMappingWhoseShareDoesNotAnswer(t *testing.T) {
	s, log := shareServer(t)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1`, "", `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Get-SmbGlobalMapping smbremotepath=\\srv\share`,
		`GetFileAttributesW \\srv\share`,
		`Remove-SmbGlobalMapping smbremotepath=\\srv\share`,
		`New-SmbGlobalMapping smbuser=DOM\u smbpassword=p smbremotepath=\\srv\share smbrequireprivacy=true`,
	}
	if got := log.list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}
