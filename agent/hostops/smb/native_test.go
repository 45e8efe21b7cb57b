package smb

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/runner"
	"github.com/pipeguard/pipeguard/agent/hostops/runner/runnertest"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/win32/win32test"
)

type fixture struct {
	host *win32test.Host
	ps   *runnertest.Fake
	n    Native
}

func newFixture() fixture {
	h := win32test.New()
	h.AddFile(`\\srv\share`)
	ps := &runnertest.Fake{Respond: func(runner.Command) ([]byte, error) { return []byte("true\r\n"), nil }}
	return fixture{host: h, ps: ps, n: Native{deps: Deps{Sys: h, Limits: runner.Bound(ps, "smb", limits.Limits{Timeout: 5 * time.Second, Concurrency: 8}), Cmdlets: PowerShell{Runner: ps}}}}
}

func TestNativePathValidAndNewLink(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	if ok, err := f.n.PathValid(ctx, `\\srv\share`); err != nil || !ok {
		t.Fatalf("PathValid of a share that answers = %v, %v", ok, err)
	}
	if ok, err := f.n.PathValid(ctx, `\\srv\other`); err != nil || ok {
		t.Fatalf("PathValid of a path that does not exist = %v, %v", ok, err)
	}
	if err := f.n.NewLink(ctx, `\\srv\share\vol`, `C:\var\lib\kubelet\pods\p\volumes\x\mount`); err != nil {
		t.Fatal(err)
	}
	data, err := f.host.ReadReparsePoint(`C:\var\lib\kubelet\pods\p\volumes\x\mount`)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := win32.ParseReparsePoint(data)
	want := win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_SYMLINK, SubstituteName: `\??\UNC\srv\share\vol\`, PrintName: `\\srv\share\vol\`}
	if err != nil || rp != want {
		t.Fatalf("the link = %+v, %v; want %+v (the target with a trailing backslash)", rp, err, want)
	}
	if err := f.n.NewLink(ctx, `\\srv\share\vol\`, `C:\other`); err != nil {
		t.Fatal(err)
	}
	data, _ = f.host.ReadReparsePoint(`C:\other`)
	if rp, _ := win32.ParseReparsePoint(data); rp.PrintName != `\\srv\share\vol\` {
		t.Fatalf("a target with its backslash got another: %q", rp.PrintName)
	}
	if cmds := f.ps.Commands(); len(cmds) != 0 {
		t.Fatalf("the native operations started processes: %v", cmds)
	}
	calls := f.host.Calls()
	if calls[0] != (win32test.Call{Func: "GetFileAttributesW", Path: `\\srv\share`}) || calls[2] != (win32test.Call{Func: "CreateSymbolicLinkW", Path: `C:\var\lib\kubelet\pods\p\volumes\x\mount`}) {
		t.Fatalf("calls %v", calls)
	}
}

func TestNativeErrors(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	f.host.Before = func(c win32test.Call) error {
		if c.Path == `\\srv\stale` {
			return win32test.Fail(c.Func, c.Path, win32test.Errno{Code: 1326, Text: "The user name or password is incorrect."})
		}
		return nil
	}
	ok, err := f.n.PathValid(ctx, `\\srv\stale`)
	if want := `checking that \\srv\stale answers: GetFileAttributesW \\srv\stale: The user name or password is incorrect.`; ok || err == nil || err.Error() != want {
		t.Fatalf("PathValid of a share that refuses = %v, %v\nwant false, %q", ok, err, want)
	}
	if err := f.n.NewLink(ctx, `\\srv\share`, `C:\l`); err != nil {
		t.Fatal(err)
	}
	err = f.n.NewLink(ctx, `\\srv\share`, `C:\l`)
	if want := `linking C:\l to \\srv\share\: CreateSymbolicLinkW C:\l: Cannot create a file when that file already exists.`; err == nil || err.Error() != want {
		t.Fatalf("a second link: %v\nwant %q", err, want)
	}
}

// IsMapped, NewGlobalMapping and RemoveGlobalMapping reach the PowerShell
// implementation, with the password in the environment only.
func TestNativeMappingsRunCmdlets(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	if ok, err := f.n.IsMapped(ctx, `\\srv\share`); err != nil || !ok {
		t.Fatalf("IsMapped = %v, %v", ok, err)
	}
	if err := f.n.NewGlobalMapping(ctx, `\\srv\share`, "user", "p@ss", true); err != nil {
		t.Fatal(err)
	}
	if err := f.n.RemoveGlobalMapping(ctx, `\\srv\share`); err != nil {
		t.Fatal(err)
	}
	want := []runner.Command{
		runner.PowerShell(scriptIsMapped, `smbremotepath=\\srv\share`),
		runner.PowerShell(scriptNewMapping, "smbuser=user", "smbpassword=p@ss", `smbremotepath=\\srv\share`, "smbrequireprivacy=true"),
		runner.PowerShell(scriptRemoveMapping, `smbremotepath=\\srv\share`),
	}
	if got := f.ps.Commands(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ran %v\nwant %v", got, want)
	}
	if err := f.ps.CheckNoText("p@ss"); err != nil {
		t.Fatal(err)
	}
	if calls := f.host.Calls(); len(calls) != 0 {
		t.Fatalf("Win32 calls made: %v", calls)
	}
}

// A share that does not answer is answered at the group's deadline: the
// caller then replaces the mapping.
func TestNativeHungShareAnswersAtTheDeadline(t *testing.T) {
	f := newFixture()
	release := make(chan struct{})
	defer close(release)
	f.host.Before = func(c win32test.Call) error {
		<-release
		return nil
	}
	f.n.Limits = runner.Bound(f.ps, "smb", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-smb"})
	cases := map[string]struct {
		call func() error
		want string
	}{
		"PathValid": {func() error { _, err := f.n.PathValid(context.Background(), `\\srv\share`); return err },
			`checking that \\srv\share answers: smb GetFileAttributesW did not finish within 100ms (host operation deadline; --host-call-timeout-smb)`},
		"NewLink": {func() error { return f.n.NewLink(context.Background(), `\\srv\share`, `C:\l`) },
			`linking C:\l to \\srv\share\: smb CreateSymbolicLinkW did not finish within 100ms (host operation deadline; --host-call-timeout-smb)`},
	}
	for name, tc := range cases {
		start := time.Now()
		err := tc.call()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s answered after %v", name, took)
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v\nwant %q", name, err, tc.want)
		}
	}
}
