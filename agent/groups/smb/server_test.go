package smb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
)

const (
	shareRoot    = `\\srv\share`
	stagingLocal = `C:\var\lib\kubelet\plugins\kubernetes.io\csi\smb.csi.k8s.io\0a1b\globalmount`
)

// shareServer returns an smb Server whose runner answers that the share is
// mapped, and Test-Path true for the paths in reachable only, and the fake
// runner.
func shareServer(t *testing.T, reachable ...string) (*Server, *runner.Fake) {
	t.Helper()
	f := &runner.Fake{Respond: func(c runner.Command) ([]byte, error) {
		script := c.Args[len(c.Args)-1]
		switch {
		case strings.Contains(script, "Get-SmbGlobalMapping"):
			return []byte("true\r\n"), nil
		case strings.Contains(script, "Test-Path"):
			for _, p := range reachable {
				if fmt.Sprint(c.Env) == fmt.Sprint([]string{"smbremotepath=" + p}) {
					return []byte("True\r\n"), nil
				}
			}
			return []byte("False\r\n"), nil
		}
		return nil, nil
	}}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(hostsmb.PowerShell{Runner: f}, conf, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

// ran returns, per command, the cmdlet it runs and its environment.
func ran(f *runner.Fake) []string {
	var out []string
	for _, c := range f.Commands() {
		script := c.Args[len(c.Args)-1]
		op := "?"
		for _, name := range []string{"Get-SmbGlobalMapping", "Test-Path", "Remove-SmbGlobalMapping", "New-SmbGlobalMapping", "SymbolicLink"} {
			if strings.Contains(script, name) {
				op = name
				break
			}
		}
		out = append(out, op+" "+strings.Join(c.Env, " "))
	}
	return out
}

// A working mapping of the share is reused when the caller's subdirectory
// does not exist (yet): the liveness probe asks the share root, as CSI
// Proxy does, so the shared mapping is neither removed nor re-made with the
// caller's credentials.
func TestNewSmbGlobalMappingProbesTheShareRootBeforeReusingAMapping(t *testing.T) {
	s, f := shareServer(t, shareRoot)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1\missing`, stagingLocal, `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Get-SmbGlobalMapping smbremotepath=\\srv\share`,
		`Test-Path smbremotepath=\\srv\share`,
		`SymbolicLink smbremotepath=\\srv\share\pvc-1\missing\ smblocalpath=` + stagingLocal,
	}
	if got := ran(f); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}

// A mapping whose share root does not answer is replaced.
func TestNewSmbGlobalMappingReplacesAMappingWhoseShareDoesNotAnswer(t *testing.T) {
	s, f := shareServer(t)
	if err := s.NewSmbGlobalMapping(context.Background(), shareRoot+`\pvc-1`, "", `DOM\u`, "p"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Get-SmbGlobalMapping smbremotepath=\\srv\share`,
		`Test-Path smbremotepath=\\srv\share`,
		`Remove-SmbGlobalMapping smbremotepath=\\srv\share`,
		`New-SmbGlobalMapping smbuser=DOM\u smbpassword=p smbremotepath=\\srv\share smbrequireprivacy=true`,
	}
	if got := ran(f); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ran\n%q\nwant\n%q", got, want)
	}
}
