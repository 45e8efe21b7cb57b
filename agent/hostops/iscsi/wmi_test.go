package iscsi

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

const (
	canary = "s3cr3t-CANARY"
	iqn2   = "iqn.2001-04.com.example:storage.disk2"
)

var pt = Portal{Address: "10.0.0.5", Port: 3260}

type wfix struct {
	p      *wmitest.Provider
	s      *wmitest.ISCSI
	w      WMI
	target *wmitest.Instance
}

// newWMI is an initiator with the portal pt, whose targets are iqn (with
// disk 2) and iqn2, none connected. MSFT_Disk is registered here, with
// only what the iSCSI operations read.
func newWMI() wfix {
	p := wmitest.New()
	s := wmitest.AddISCSI(p)
	p.AddClass(&wmitest.Class{Namespace: wmi.NamespaceStorage, Name: "MSFT_Disk", Key: "ObjectId"})
	portal := s.AddPortal(pt.Address, uint16(pt.Port))
	t1 := s.AddTarget(portal, iqn)
	s.AddTarget(portal, iqn2)
	s.AttachDisk(t1, p.Add(wmi.NamespaceStorage, "MSFT_Disk", map[string]any{"ObjectId": "disk-2", "Number": uint32(2)}))
	return wfix{p: p, s: s, w: WMI{Conn: p}, target: t1}
}

// check fails when the secret is in a query or err, or a query the
// operations ran does not parse.
func (f wfix) check(t *testing.T, err error, secret string) {
	t.Helper()
	for _, q := range f.p.Queries() {
		if strings.Contains(q, secret) {
			t.Errorf("the secret is in the query %q", q)
		}
		var we *wmi.Error
		_, qerr := f.p.Query(context.Background(), wmi.NamespaceStorage, q)
		if errors.As(qerr, &we) && we.HRESULT != wmi.WBEMENotFound { // an object since removed is not a parse error
			t.Errorf("the query %q does not parse: %v", q, qerr)
		} else if qerr != nil && we == nil {
			t.Errorf("the query %q does not parse: %v", q, qerr)
		}
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the secret is in the error %q", err)
	}
}

func (f wfix) methods() []string {
	var m []string
	for _, c := range f.p.Calls() {
		m = append(m, c.Method)
	}
	return m
}

func TestWMIPortals(t *testing.T) {
	ctx := context.Background()
	f := newWMI()
	other := Portal{Address: "10.0.0.5", Port: 3261}
	if err := f.w.AddTargetPortal(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := f.w.AddTargetPortal(ctx, pt); err != nil { // exists: nothing done
		t.Fatal(err)
	}
	want := []wmitest.Call{{Namespace: wmi.NamespaceStorage, Path: "MSFT_iSCSITargetPortal", Method: "MSFT_iSCSITargetPortal.New",
		In: map[string]any{"TargetPortalAddress": "10.0.0.5", "TargetPortalPortNumber": uint16(3261)}}}
	if got := f.p.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v\nwant %+v", got, want)
	}
	if got, err := f.w.ListTargetPortals(ctx); err != nil || !reflect.DeepEqual(got, []Portal{pt, other}) {
		t.Fatalf("ListTargetPortals = %v, %v", got, err)
	}
	if got, err := f.w.DiscoverTargetPortal(ctx, pt); err != nil || !reflect.DeepEqual(got, []string{iqn, iqn2}) {
		t.Fatalf("DiscoverTargetPortal = %v, %v", got, err)
	}
	if err := f.w.RemoveTargetPortal(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := f.p.Calls()[1]; got.Method != "MSFT_iSCSITargetPortal.Remove" ||
		!reflect.DeepEqual(got.In, map[string]any{"TargetPortalAddress": "10.0.0.5", "TargetPortalPortNumber": uint16(3261)}) {
		t.Fatalf("Remove call %+v", got)
	}
	if got, err := f.w.ListTargetPortals(ctx); err != nil || !reflect.DeepEqual(got, []Portal{pt}) {
		t.Fatalf("after Remove, ListTargetPortals = %v, %v", got, err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{f.w.RemoveTargetPortal(ctx, other), "removing the target portal at 10.0.0.5:3261: there is no target portal at 10.0.0.5:3261"},
		{f.w.AddTargetPortal(ctx, Portal{Address: "10.0.0.5", Port: 70000}), "adding a target portal: target portal port 70000 is past 65535"},
		{func() error { _, err := f.w.DiscoverTargetPortal(ctx, other); return err }(),
			"discovering the targets of the portal at 10.0.0.5:3261: there is no target portal at 10.0.0.5:3261"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got %v\nwant %q", tc.err, tc.want)
		}
	}
	f.check(t, nil, canary)
}

func TestWMIConnectAndDisconnect(t *testing.T) {
	ctx := context.Background()
	f := newWMI()
	if disks, err := f.w.GetTargetDisks(ctx, pt, iqn); err != nil || len(disks) != 0 {
		t.Fatalf("disks of a target not connected: %v, %v", disks, err)
	}
	if err := f.w.ConnectTarget(ctx, pt, iqn, AuthMutualCHAP, "chapuser", canary); err != nil {
		t.Fatal(err)
	}
	if err := f.w.ConnectTarget(ctx, pt, iqn, AuthMutualCHAP, "chapuser", canary); err != nil { // connected: nothing done
		t.Fatal(err)
	}
	want := []wmitest.Call{{Namespace: wmi.NamespaceStorage, Path: "MSFT_iSCSITarget", Method: "MSFT_iSCSITarget.Connect",
		In: map[string]any{"NodeAddress": iqn, "TargetPortalAddress": "10.0.0.5", "TargetPortalPortNumber": uint16(3260),
			"AuthenticationType": "MUTUALCHAP", "IsPersistent": false, "ChapUsername": "chapuser", "ChapSecret": canary}}}
	if got := f.p.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v\nwant %+v", got, want)
	}
	if disks, err := f.w.GetTargetDisks(ctx, pt, iqn); err != nil || !reflect.DeepEqual(disks, []string{"2"}) {
		t.Fatalf("disks = %v, %v", disks, err)
	}
	session := f.p.Instances(wmi.NamespaceStorage, "MSFT_iSCSISession")[0]
	if session.Props["IsPersistent"] != false {
		t.Fatalf("the session is persistent")
	}
	if err := f.w.DisconnectTarget(ctx, pt, iqn); err != nil {
		t.Fatal(err)
	}
	if err := f.w.DisconnectTarget(ctx, pt, iqn); err != nil { // not connected: nothing done
		t.Fatal(err)
	}
	calls := f.p.Calls()
	if len(calls) != 2 || calls[1].Method != "MSFT_iSCSITarget.Disconnect" || calls[1].Path != wmitest.RelPath("MSFT_iSCSITarget", "NodeAddress", iqn) ||
		!reflect.DeepEqual(calls[1].In, map[string]any{"SessionIdentifier": session.Props["SessionIdentifier"]}) {
		t.Fatalf("calls %+v", calls)
	}
	if f.target.Props["IsConnected"] != false {
		t.Fatal("the target is still connected")
	}
	// Without CHAP no CHAP parameter is passed, whatever the request holds.
	if err := f.w.ConnectTarget(ctx, pt, iqn2, AuthNone, "u", canary); err != nil {
		t.Fatal(err)
	}
	if in := f.p.Calls()[2].In; in["AuthenticationType"] != "NONE" || in["ChapSecret"] != nil || in["ChapUsername"] != nil {
		t.Fatalf("Connect without CHAP passed %v", in)
	}
	f.check(t, nil, canary)
}

// A persistent session, made by an older CSI Proxy, is unregistered
// before its target is disconnected.
func TestWMIDisconnectUnregistersAPersistentSession(t *testing.T) {
	ctx := context.Background()
	f := newWMI()
	if err := f.w.ConnectTarget(ctx, pt, iqn, AuthNone, "", ""); err != nil {
		t.Fatal(err)
	}
	session := f.p.Instances(wmi.NamespaceStorage, "MSFT_iSCSISession")[0]
	session.Props["IsPersistent"] = true
	if err := f.w.DisconnectTarget(ctx, pt, iqn); err != nil {
		t.Fatal(err)
	}
	calls := f.p.Calls()
	if got := f.methods(); !reflect.DeepEqual(got, []string{"MSFT_iSCSITarget.Connect", "MSFT_iSCSISession.Unregister", "MSFT_iSCSITarget.Disconnect"}) ||
		calls[1].Path != wmitest.RelPath("MSFT_iSCSISession", "SessionIdentifier", session.Props["SessionIdentifier"].(string)) {
		t.Fatalf("calls %+v", calls)
	}
}

// Failed methods and missing objects read as what failed, never a secret.
func TestWMIFailures(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		class, method string
		code          uint32
		call          func(WMI) error
		want          string
	}{
		{"MSFT_iSCSITarget", "Connect", wmitest.ISDSCAuthenticationFailure,
			func(w WMI) error { return w.ConnectTarget(ctx, pt, iqn, AuthOneWayCHAP, "u", canary) },
			`connecting to target "` + iqn + `" at 10.0.0.5:3260: MSFT_iSCSITarget.Connect returned 4026466313 (Authentication failure)`},
		{"MSFT_iSCSITargetPortal", "New", wmitest.ISDSCLoginFailed,
			func(w WMI) error { return w.AddTargetPortal(ctx, Portal{Address: "portal.example", Port: 3260}) },
			`adding the target portal at portal.example:3260: MSFT_iSCSITargetPortal.New returned 4026466306 (The login failed)`},
		{"MSFT_iSCSISession", "SetCHAPSecret", 5,
			func(w WMI) error { return w.SetMutualChapSecret(ctx, canary) },
			`setting the mutual CHAP secret: MSFT_iSCSISession.SetCHAPSecret returned 5`},
		{"", "", 0, func(w WMI) error { return w.ConnectTarget(ctx, pt, iqn2, AuthOneWayCHAP, "u", "other-"+canary) },
			`connecting to target "` + iqn2 + `" at 10.0.0.5:3260: MSFT_iSCSITarget.Connect returned 4026466313 (Authentication failure)`},
		{"", "", 0, func(w WMI) error { return w.ConnectTarget(ctx, pt, "iqn.x", AuthMutualCHAP, "u", canary) },
			`connecting to target "iqn.x" at 10.0.0.5:3260: the target portal at 10.0.0.5:3260 has no target "iqn.x"`},
		{"", "", 0, func(w WMI) error { return w.SetMutualChapSecret(ctx, "a\x00"+canary) },
			`setting the mutual CHAP secret: the mutual CHAP secret holds a NUL character`},
		{"", "", 0, func(w WMI) error { return w.ConnectTarget(ctx, pt, iqn, AuthOneWayCHAP, "u", "a\x00"+canary) },
			`connecting to target "` + iqn + `": the CHAP secret holds a NUL character`},
	}
	for _, tc := range cases {
		f := newWMI()
		f.s.RequireCHAP(f.p.Instances(wmi.NamespaceStorage, "MSFT_iSCSITarget")[1], "u", canary)
		if tc.code != 0 {
			f.s.Fail(tc.class, tc.method, tc.code)
		}
		err := tc.call(f.w)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v\nwant %q", err, tc.want)
		}
		f.check(t, err, canary)
	}
}

// Every string field holding a hostile value: refused with a clear error,
// or passed only quoted or as an in-parameter, acting on no other object.
func TestWMIHostileValues(t *testing.T) {
	ctx := context.Background()
	for _, v := range append(hostile.Values(), "x\x00y", "10.0.0.5' OR TRUE OR '") {
		f := newWMI()
		bad := Portal{Address: v, Port: 3260}
		_, e4 := f.w.DiscoverTargetPortal(ctx, bad)
		_, e6 := f.w.GetTargetDisks(ctx, bad, iqn)
		for _, err := range []error{f.w.AddTargetPortal(ctx, bad), f.w.RemoveTargetPortal(ctx, bad), e4,
			f.w.ConnectTarget(ctx, bad, iqn, AuthNone, "", ""), f.w.DisconnectTarget(ctx, bad, iqn), e6} {
			if err == nil || !strings.Contains(err.Error(), "is not an IP address or DNS name") {
				t.Errorf("portal address %q: %v", v, err)
			}
		}
		if calls := f.p.Calls(); len(calls) != 0 {
			t.Errorf("portal address %q made calls %v", v, calls)
		}
		// The IQN is compared in the agent: no other target is touched.
		if err := f.w.ConnectTarget(ctx, pt, v, AuthNone, "", ""); err == nil {
			t.Errorf("connected to %q", v)
		}
		if _, err := f.w.GetTargetDisks(ctx, pt, v); err == nil {
			t.Errorf("disks of %q", v)
		}
		if f.target.Props["IsConnected"] != false || len(f.p.Calls()) != 0 {
			t.Errorf("IQN %q reached another target: %v", v, f.p.Calls())
		}
		// CHAP values go as in-parameters, unchanged: the target that
		// requires them accepts them.
		secret := v + canary
		f.s.RequireCHAP(f.target, v, secret)
		err := f.w.ConnectTarget(ctx, pt, iqn, AuthMutualCHAP, v, secret)
		if strings.ContainsRune(v, 0) || strings.ContainsAny(v, "\r\n") {
			if err == nil {
				t.Errorf("CHAP user %q accepted", v)
			}
		} else if calls := f.p.Calls(); err != nil || len(calls) != 1 || calls[0].In["ChapUsername"] != v || calls[0].In["ChapSecret"] != secret {
			t.Errorf("CHAP user %q: %v, calls %+v", v, err, calls)
		}
		f.check(t, err, canary)
		err = f.w.SetMutualChapSecret(ctx, secret)
		if strings.ContainsRune(v, 0) != (err != nil) || (err == nil && f.s.MutualCHAPSecret() != secret) {
			t.Errorf("mutual secret of %q: %v", v, err)
		}
		f.check(t, err, canary)
		// A target whose IQN is the value: only it is connected, and a path
		// ASSOCIATORS OF cannot hold is refused in so many words.
		f = newWMI()
		hostileTarget := f.s.AddTarget(f.p.Instances(wmi.NamespaceStorage, "MSFT_iSCSITargetPortal")[0], v)
		err = f.w.ConnectTarget(ctx, pt, v, AuthNone, "", "")
		if err != nil {
			if !strings.Contains(err.Error(), "holds the control character") {
				t.Errorf("connecting %q: %v", v, err)
			}
			continue
		}
		if calls := f.p.Calls(); len(calls) != 1 || calls[0].In["NodeAddress"] != v || hostileTarget.Props["IsConnected"] != true || f.target.Props["IsConnected"] != false {
			t.Errorf("connecting %q: calls %+v", v, calls)
		}
		if _, err := f.w.GetTargetDisks(ctx, pt, v); err != nil && !strings.Contains(err.Error(), "cannot follow MSFT_iSCSITargetToiSCSIConnection from the object path") {
			t.Errorf("disks of %q: %v", v, err)
		}
		f.check(t, nil, canary)
	}
}

// A provider that does not answer is answered at the deadline, without
// the secret the held call carries.
func TestWMIHeldMethodAnswersAtTheDeadline(t *testing.T) {
	f := newWMI()
	release := f.p.Hold("MSFT_iSCSITarget", "Connect")
	defer release()
	f.w.Limits = limits.Bound("iscsi", limits.Limits{Timeout: 100 * time.Millisecond, Concurrency: 8, Setting: "--host-call-timeout-iscsi"})
	start := time.Now()
	err := f.w.ConnectTarget(context.Background(), pt, iqn, AuthOneWayCHAP, "u", canary)
	var de *limits.DeadlineError
	if time.Since(start) > 2*time.Second || !errors.As(err, &de) || err.Error() != `connecting to target "`+iqn+
		`" at 10.0.0.5:3260: iscsi MSFT_iSCSITarget.Connect did not finish within 100ms (host operation deadline; --host-call-timeout-iscsi)` {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	f.w.Limits = nil
	defer f.p.Hold("MSFT_iSCSISession", "SetCHAPSecret")()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = f.w.SetMutualChapSecret(ctx, canary)
	if time.Since(start) > 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with the request's deadline, after %v: %v", time.Since(start), err)
	}
	f.check(t, err, canary)
}

func TestWMIWithoutConnFailsClosed(t *testing.T) {
	ctx := context.Background()
	var w WMI
	_, e2 := w.DiscoverTargetPortal(ctx, pt)
	_, e4 := w.ListTargetPortals(ctx)
	_, e7 := w.GetTargetDisks(ctx, pt, iqn)
	for i, err := range []error{w.AddTargetPortal(ctx, pt), e2, w.RemoveTargetPortal(ctx, pt), e4,
		w.ConnectTarget(ctx, pt, iqn, AuthMutualCHAP, "u", canary), w.DisconnectTarget(ctx, pt, iqn), e7, w.SetMutualChapSecret(ctx, canary)} {
		if err == nil || !strings.Contains(err.Error(), "no WMI connection (WMI.Conn is nil)") || strings.Contains(err.Error(), canary) {
			t.Errorf("operation %d without a Conn: %v", i, err)
		}
	}
}
