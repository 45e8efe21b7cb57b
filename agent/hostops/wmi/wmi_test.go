package wmi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/hostile"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// TestQuoteKeepsHostileValuesData: every hostile string either is refused
// by Quote or, quoted into a query, matches exactly the instance that
// holds it and no other: no value can end the literal and add WQL.
func TestQuoteKeepsHostileValuesData(t *testing.T) {
	p := wmitest.New()
	p.AddClass(&wmitest.Class{Namespace: wmi.NamespaceStorage, Name: "MSFT_Volume", Key: "UniqueId"})
	values := append(hostile.Values(), "x\x00y", "x\ty", `a' OR UniqueId <> '`, `\'`, `\\`, `"`, `' OR TRUE OR '`)
	for _, v := range values {
		p.Add(wmi.NamespaceStorage, "MSFT_Volume", map[string]any{"UniqueId": v})
	}
	p.Add(wmi.NamespaceStorage, "MSFT_Volume", map[string]any{"UniqueId": "victim"})
	for _, v := range values {
		q, err := wmi.Quote(v)
		if err != nil {
			if !strings.Contains(err.Error(), "WQL value") {
				t.Errorf("Quote(%q) refused with %q, want it to name the WQL value", v, err)
			}
			continue
		}
		got, err := p.Query(context.Background(), wmi.NamespaceStorage, "SELECT * FROM MSFT_Volume WHERE UniqueId = "+q)
		if err != nil {
			t.Errorf("query of %q: %v", v, err)
			continue
		}
		for _, o := range got {
			if !strings.EqualFold(o.Props["UniqueId"].(string), v) {
				t.Errorf("query of %q (%s) matched %q", v, q, o.Props["UniqueId"])
			}
		}
		if len(got) == 0 {
			t.Errorf("query of %q (%s) matched nothing, want its own instance", v, q)
		}
	}
}

func TestResultNamesTheMethodAndCode(t *testing.T) {
	for name, tc := range map[string]struct {
		out  wmi.Object
		want string
	}{
		"success":      {out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(0)}}},
		"common code":  {out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(40001)}}, want: "MSFT_Disk.Online returned 40001 (Access denied)"},
		"own code":     {out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(41001)}}, want: "MSFT_Disk.Online returned 41001 (The disk has already been initialized)"},
		"unknown code": {out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(77)}}, want: "MSFT_Disk.Online returned 77"},
		"status": {out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(4), "ExtendedStatus": wmi.Object{Props: map[string]any{"Message": "the disk is offline"}}}},
			want: "MSFT_Disk.Online returned 4 (Failed): the disk is offline"},
		"no return value":       {out: wmi.Object{Props: map[string]any{}}, want: "MSFT_Disk.Online returned no ReturnValue"},
		"mistyped return value": {out: wmi.Object{Props: map[string]any{"ReturnValue": "0"}}, want: "MSFT_Disk.Online returned ReturnValue 0 (string), want an unsigned integer"},
		"negative return value": {out: wmi.Object{Props: map[string]any{"ReturnValue": int32(-1)}}, want: "MSFT_Disk.Online returned ReturnValue -1 (int32), want an unsigned integer"},
	} {
		t.Run(name, func(t *testing.T) {
			err := wmi.Result("MSFT_Disk.Online", tc.out, wmi.Codes{Text: map[uint32]string{41001: "The disk has already been initialized"}})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestErrorNamesTheHRESULT(t *testing.T) {
	err := error(&wmi.Error{Op: "query of MSFT_Disk", HRESULT: wmi.WBEMENotFound})
	if got, want := err.Error(), "WMI query of MSFT_Disk failed: WBEM_E_NOT_FOUND (0x80041002)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !wmi.IsNotFound(err) || wmi.IsNotFound(errors.New("x")) || wmi.IsNotFound(&wmi.Error{HRESULT: wmi.WBEMEAccessDenied}) {
		t.Fatal("IsNotFound")
	}
	if got, want := (&wmi.Error{Op: "x", HRESULT: 0x80070005}).Error(), "WMI x failed with 0x80070005"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestUnsupportedRefusesEverything: off Windows every call fails, naming
// the OS, and a method's values never appear in the error.
func TestUnsupportedRefusesEverything(t *testing.T) {
	u := wmi.Unsupported{GOOS: "linux"}
	ctx := context.Background()
	if _, err := u.Query(ctx, wmi.NamespaceStorage, "SELECT * FROM MSFT_Disk"); err == nil || !strings.Contains(err.Error(), "needs Windows") {
		t.Errorf("Query: %v", err)
	}
	if _, err := u.Get(ctx, wmi.NamespaceStorage, "MSFT_Disk"); err == nil || !strings.Contains(err.Error(), "on linux") {
		t.Errorf("Get: %v", err)
	}
	_, err := u.Call(ctx, wmi.NamespaceSMB, "MSFT_SmbGlobalMapping", "Create", wmi.Param{Name: "Password", Value: "s3cr3t-CANARY"})
	if err == nil || !strings.Contains(err.Error(), "method Create") || strings.Contains(err.Error(), "CANARY") {
		t.Errorf("Call: %v", err)
	}
}
