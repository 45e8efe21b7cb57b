package smb

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

type fixture struct {
	host *win32test.Host
	wmi  *wmitest.Provider
	smb  *wmitest.SMB
	n    Native
}

func newFixture() fixture {
	h := win32test.New()
	h.AddFile(`\\srv\share`)
	p := wmitest.New()
	s := wmitest.AddSMB(p)
	l := limits.Bound("smb", limits.Limits{Timeout: 5 * time.Second, Concurrency: 8})
	return fixture{host: h, wmi: p, smb: s, n: Native{deps: Deps{Sys: h, Limits: l, Cmdlets: WMI{Conn: p, Limits: l}}}}
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
	if calls, queries := f.wmi.Calls(), f.wmi.Queries(); len(calls) != 0 || len(queries) != 0 {
		t.Fatalf("the native operations went through WMI: calls %v, queries %q", calls, queries)
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

// IsMapped, NewGlobalMapping and RemoveGlobalMapping reach the WMI
// implementation, with the password in Create's Credential in-parameter
// only, and make no Win32 call.
func TestNativeMappingsRunCmdlets(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	if ok, err := f.n.IsMapped(ctx, `\\srv\share`); err != nil || ok {
		t.Fatalf("IsMapped before the mapping = %v, %v", ok, err)
	}
	if err := f.n.NewGlobalMapping(ctx, `\\srv\share`, "user", "p@ss", true); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.n.IsMapped(ctx, `\\srv\share`); err != nil || !ok {
		t.Fatalf("IsMapped = %v, %v", ok, err)
	}
	if u := f.smb.User(`\\srv\share`); u != "user" {
		t.Fatalf("the mapping's user is %q, want user", u)
	}
	if err := f.n.RemoveGlobalMapping(ctx, `\\srv\share`); err != nil {
		t.Fatal(err)
	}
	if m := f.wmi.Instances(wmi.NamespaceSMB, wmitest.ClassSmbGlobalMapping); len(m) != 0 {
		t.Fatalf("mappings left: %v", m)
	}
	calls := f.wmi.Calls()
	var methods []string
	for _, c := range calls {
		methods = append(methods, c.Method)
	}
	if want := []string{"MSFT_SmbGlobalMapping.Create", "MSFT_SmbGlobalMapping.Remove"}; !reflect.DeepEqual(methods, want) {
		t.Fatalf("called %q\nwant %q", methods, want)
	}
	wantIn := map[string]any{"RemotePath": `\\srv\share`, "RequirePrivacy": true, "Credential": "user:p@ss"}
	if !reflect.DeepEqual(calls[0].In, wantIn) {
		t.Fatalf("Create's in-parameters %v\nwant %v", calls[0].In, wantIn)
	}
	for _, q := range f.wmi.Queries() {
		if strings.Contains(q, "p@ss") {
			t.Fatalf("the password is in the query %q", q)
		}
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
	f.n.Limits = limits.Bound("smb", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-smb"})
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
