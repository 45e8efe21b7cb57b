package smb

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/hostile"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const canary = "s3cr3t-CANARY"

func newWMI() (*wmitest.Provider, *wmitest.SMB, WMI) {
	p := wmitest.New()
	s := wmitest.AddSMB(p)
	return p, s, WMI{Conn: p}
}

// noSecret fails when the secret is in a query the provider ran or in err.
func noSecret(t *testing.T, p *wmitest.Provider, err error, secret string) {
	t.Helper()
	for _, q := range p.Queries() {
		if strings.Contains(q, secret) {
			t.Errorf("the secret is in the query %q", q)
		}
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the secret is in the error %q", err)
	}
}

func TestWMIIsMapped(t *testing.T) {
	ctx := context.Background()
	p, s, w := newWMI()
	s.AddMapping(`\\srv\ok`, wmitest.SmbStatusOK)
	s.AddMapping(`\\srv\down`, wmitest.SmbStatusDisconnected)
	for _, tc := range []struct {
		path string
		want bool
	}{{`\\SRV\OK`, true}, {`\\srv\down`, false}, {`\\srv\none`, false}, {`\\srv\ok`, true}} {
		got, err := w.IsMapped(ctx, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("IsMapped(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if q := p.Queries(); !reflect.DeepEqual(q[len(q)-1:], []string{`SELECT * FROM MSFT_SmbGlobalMapping WHERE RemotePath = '\\\\srv\\ok'`}) {
		t.Errorf("queries %q", q)
	}
	if calls := p.Calls(); len(calls) != 0 {
		t.Errorf("IsMapped called methods: %v", calls)
	}
	// A Status the provider hands over as a signed integer reads by its
	// value; one that is not a number is an error, never mapped.
	p.Add(wmi.NamespaceSMB, "MSFT_SmbGlobalMapping", map[string]any{"RemotePath": `\\srv\signed`, "Status": int32(0)})
	p.Add(wmi.NamespaceSMB, "MSFT_SmbGlobalMapping", map[string]any{"RemotePath": `\\srv\odd`, "Status": "OK"})
	if ok, err := w.IsMapped(ctx, `\\srv\signed`); !ok || err != nil {
		t.Errorf("IsMapped of a mapping with Status int32(0) = %v, %v", ok, err)
	}
	ok, err := w.IsMapped(ctx, `\\srv\odd`)
	if want := `looking up the global mapping of \\srv\odd: the global mapping has Status OK (string), want an unsigned integer`; ok || err == nil || err.Error() != want {
		t.Errorf("IsMapped of a mapping with Status \"OK\" = %v, %v\nwant %q", ok, err, want)
	}
}

func TestWMINewGlobalMapping(t *testing.T) {
	ctx := context.Background()
	p, s, w := newWMI()
	if err := w.NewGlobalMapping(ctx, `\\srv\share`, `CORP\us:er`, canary, true); err != nil {
		t.Fatal(err)
	}
	if err := w.NewGlobalMapping(ctx, `\\srv\anon`, "", canary, false); err != nil {
		t.Fatal(err)
	}
	want := []wmitest.Call{
		{Namespace: wmi.NamespaceSMB, Path: "MSFT_SmbGlobalMapping", Method: "MSFT_SmbGlobalMapping.Create",
			In: map[string]any{"RemotePath": `\\srv\share`, "RequirePrivacy": true, "Credential": `CORP\\us\:er:` + canary}},
		// No user name: no credential at all, the host's own identity.
		{Namespace: wmi.NamespaceSMB, Path: "MSFT_SmbGlobalMapping", Method: "MSFT_SmbGlobalMapping.Create",
			In: map[string]any{"RemotePath": `\\srv\anon`, "RequirePrivacy": false}},
	}
	if got := p.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v\nwant %+v", got, want)
	}
	if u := s.User(`\\srv\share`); u != `CORP\us:er` {
		t.Errorf("the provider read the user name %q from the credential", u)
	}
	if ok, err := w.IsMapped(ctx, `\\srv\share`); !ok || err != nil {
		t.Errorf("after NewGlobalMapping, IsMapped = %v, %v", ok, err)
	}
	noSecret(t, p, nil, canary)
}

func TestWMIRemoveGlobalMapping(t *testing.T) {
	ctx := context.Background()
	p, s, w := newWMI()
	s.AddMapping(`\\srv\share`, wmitest.SmbStatusOK)
	s.AddMapping(`\\srv\other`, wmitest.SmbStatusOK)
	if err := w.RemoveGlobalMapping(ctx, `\\srv\share`); err != nil {
		t.Fatal(err)
	}
	want := []wmitest.Call{{Namespace: wmi.NamespaceSMB, Path: `MSFT_SmbGlobalMapping.RemotePath="\\\\srv\\share"`,
		Method: "MSFT_SmbGlobalMapping.Remove", In: map[string]any{"Force": true}}}
	if got := p.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v\nwant %+v", got, want)
	}
	if left := p.Instances(wmi.NamespaceSMB, "MSFT_SmbGlobalMapping"); len(left) != 1 || left[0].Props["RemotePath"] != `\\srv\other` {
		t.Fatalf("mappings left: %v", left)
	}
	err := w.RemoveGlobalMapping(ctx, `\\srv\share`)
	if want := `removing the global mapping of \\srv\share: there is no global mapping of it`; err == nil || err.Error() != want {
		t.Fatalf("removing a missing mapping: %v\nwant %q", err, want)
	}
}

// A failed method reads as its code and its meaning, never the password.
func TestWMIFailureCodes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		method string
		code   uint32
		call   func(WMI) error
		want   string
	}{
		{"Create", 1326, func(w WMI) error { return w.NewGlobalMapping(ctx, `\\srv\share`, "user", canary, true) },
			`mapping \\srv\share: MSFT_SmbGlobalMapping.Create returned 1326 (The user name or password is incorrect)`},
		{"Create", 53, func(w WMI) error { return w.NewGlobalMapping(ctx, `\\srv\share`, "user", canary, true) },
			`mapping \\srv\share: MSFT_SmbGlobalMapping.Create returned 53 (The network path was not found)`},
		// A code Microsoft gives these methods no meaning for is a number:
		// not the storage management "Unspecified Error".
		{"Create", 2, func(w WMI) error { return w.NewGlobalMapping(ctx, `\\srv\share`, "user", canary, false) },
			`mapping \\srv\share: MSFT_SmbGlobalMapping.Create returned 2`},
		{"Remove", 5, func(w WMI) error { return w.RemoveGlobalMapping(ctx, `\\srv\share`) },
			`removing the global mapping of \\srv\share: MSFT_SmbGlobalMapping.Remove returned 5 (Access is denied)`},
	}
	for _, tc := range cases {
		p, s, w := newWMI()
		s.AddMapping(`\\srv\share`, wmitest.SmbStatusOK)
		s.Fail(tc.method, tc.code)
		err := tc.call(w)
		var me *wmi.MethodError
		if err == nil || err.Error() != tc.want || !errors.As(err, &me) || me.Code != tc.code {
			t.Errorf("%s failing with %d: %v\nwant %q", tc.method, tc.code, err, tc.want)
		}
		noSecret(t, p, err, canary)
	}
}

// Every string field holding a hostile value: the query is refused or
// parses and matches nothing else; the values reach Create only as
// in-parameters, unchanged; the secret is in no query and no error.
func TestWMIHostileValues(t *testing.T) {
	ctx := context.Background()
	for _, v := range append(hostile.Values(), "x\x00y", `\\srv\victim`+"'") {
		p, s, w := newWMI()
		s.AddMapping(`\\srv\victim`, wmitest.SmbStatusOK)
		_, quoteErr := wmi.Quote(v)
		ok, err := w.IsMapped(ctx, v)
		if ok || (quoteErr == nil) != (err == nil) {
			t.Errorf("IsMapped(%q) = %v, %v", v, ok, err)
		}
		if err := w.RemoveGlobalMapping(ctx, v); err == nil {
			t.Errorf("RemoveGlobalMapping(%q) removed something", v)
		}
		password := v + canary
		err = w.NewGlobalMapping(ctx, v, v, password, true)
		if strings.ContainsRune(v, 0) {
			if err == nil || err.Error() != `mapping "x\x00y": the remote path holds a NUL character` {
				t.Errorf("a NUL remote path: %v", err)
			}
		} else if err != nil {
			t.Errorf("NewGlobalMapping(%q): %v", v, err)
		} else if u := s.User(v); u != v {
			t.Errorf("the provider read the user name %q from the credential of %q", u, v)
		}
		if left := p.Instances(wmi.NamespaceSMB, "MSFT_SmbGlobalMapping"); left[0].Props["RemotePath"] != `\\srv\victim` || left[0].Props["Status"] != wmitest.SmbStatusOK {
			t.Errorf("%q changed another mapping: %v", v, left[0].Props)
		}
		for _, c := range p.Calls() {
			if c.Method != "MSFT_SmbGlobalMapping.Create" {
				t.Errorf("%q made the call %+v", v, c)
			}
		}
		noSecret(t, p, err, canary)
	}
	// A NUL in the user name or password is refused, naming the field only.
	p, _, w := newWMI()
	err := w.NewGlobalMapping(ctx, `\\srv\share`, "user", "a\x00"+canary, true)
	if err == nil || err.Error() != `mapping \\srv\share: the password holds a NUL character` {
		t.Errorf("a NUL password: %v", err)
	}
	noSecret(t, p, err, canary)
	err = w.NewGlobalMapping(ctx, `\\srv\share`, "us\x00er", canary, true)
	if err == nil || err.Error() != `mapping \\srv\share: the user name holds a NUL character` {
		t.Errorf("a NUL user name: %v", err)
	}
	if calls := p.Calls(); len(calls) != 0 {
		t.Errorf("calls made: %v", calls)
	}
}

// A provider that does not answer is answered at the deadline, with the
// group's DeadlineError or the request's own end.
func TestWMIHeldMethodAnswersAtTheDeadline(t *testing.T) {
	p, _, w := newWMI()
	release := p.Hold("MSFT_SmbGlobalMapping", "Create")
	defer release()
	w.Limits = limits.Bound("smb", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-smb"})
	start := time.Now()
	err := w.NewGlobalMapping(context.Background(), `\\srv\share`, "user", canary, true)
	var de *limits.DeadlineError
	if time.Since(start) > 2*time.Second || !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) ||
		err.Error() != `mapping \\srv\share: smb MSFT_SmbGlobalMapping.Create did not finish within 100ms (host operation deadline; --host-call-timeout-smb)` {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	w.Limits = nil
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = w.NewGlobalMapping(ctx, `\\srv\share`, "user", canary, true)
	if time.Since(start) > 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with the request's deadline, after %v: %v", time.Since(start), err)
	}
	noSecret(t, p, err, canary)
}

func TestWMIWithoutConnFailsClosed(t *testing.T) {
	ctx := context.Background()
	var w WMI
	_, err1 := w.IsMapped(ctx, `\\srv\share`)
	errs := []error{err1, w.NewGlobalMapping(ctx, `\\srv\share`, "u", canary, true), w.RemoveGlobalMapping(ctx, `\\srv\share`)}
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "no WMI connection (WMI.Conn is nil)") || strings.Contains(err.Error(), canary) {
			t.Errorf("operation %d without a Conn: %v", i, err)
		}
	}
}
