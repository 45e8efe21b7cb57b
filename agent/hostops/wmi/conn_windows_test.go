//go:build windows

package wmi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// These tests run against the host's WMI: on Windows, and under Wine
// (test/wine), whose WMI has the Win32_* classes and StdRegProv.

const (
	hkcu = uint32(0x80000001)
	hklm = uint32(0x80000002)
)

func newConn(t *testing.T) (wmi.Conn, context.Context) {
	t.Helper()
	c, err := wmi.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c, ctx
}

// wantType fails unless o has prop of type T; with optional, a missing or
// NULL prop passes.
func wantType[T any](t *testing.T, o wmi.Object, prop string, optional bool) {
	t.Helper()
	v, ok := o.Props[prop]
	if !ok || v == nil {
		if !optional {
			t.Errorf("%s has no %s: %v", o.Class, prop, o.Props)
		}
		return
	}
	if _, ok := v.(T); !ok {
		var want T
		t.Errorf("%s.%s is %T (%v), want %T", o.Class, prop, v, v, want)
	}
}

func queryOne(t *testing.T, c wmi.Conn, ctx context.Context, class string) wmi.Object {
	t.Helper()
	objs, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT * FROM "+class)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("no %s", class)
	}
	if objs[0].Class != class {
		t.Fatalf("query of %s returned a %q", class, objs[0].Class)
	}
	return objs[0]
}

// TestQueryConvertsByCIMType: a query's objects have their class and
// their values in the Go types of their CIM types.
func TestQueryConvertsByCIMType(t *testing.T) {
	c, ctx := newConn(t)
	bios := queryOne(t, c, ctx, "Win32_BIOS")
	wantType[string](t, bios, "Manufacturer", false)
	wantType[uint16](t, bios, "SMBIOSMajorVersion", false)
	wantType[uint8](t, bios, "SystemBiosMajorVersion", true)
	wantType[[]string](t, bios, "BIOSVersion", true)
	wantType[[]uint16](t, bios, "BiosCharacteristics", true)

	osObj := queryOne(t, c, ctx, "Win32_OperatingSystem")
	wantType[string](t, osObj, "Caption", false)
	wantType[uint16](t, osObj, "OSType", false)
	wantType[uint32](t, osObj, "OSLanguage", false)
	wantType[uint64](t, osObj, "FreePhysicalMemory", false)
	wantType[bool](t, osObj, "Primary", false)
	wantType[int32](t, osObj, "CurrentTimeZone", false) // sint16, widened
	if osObj.Path == "" || strings.ContainsRune(osObj.Path, 0) {
		t.Errorf("Win32_OperatingSystem path %q", osObj.Path)
	}

	// Only ChassisTypes: the class has real32 properties, which the
	// agent does not read.
	encs, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT ChassisTypes FROM Win32_SystemEnclosure")
	if err != nil || len(encs) == 0 {
		t.Fatalf("query of Win32_SystemEnclosure: %d objects, %v", len(encs), err)
	}
	wantType[[]uint16](t, encs[0], "ChassisTypes", false)
}

// TestGetClassAndInstance: Get of a class, and of an instance by the path
// a query gave it.
func TestGetClassAndInstance(t *testing.T) {
	c, ctx := newConn(t)
	cls, err := c.Get(ctx, wmi.NamespaceCIMv2, "Win32_LogicalDisk")
	if err != nil {
		t.Fatal(err)
	}
	if cls.Class != "Win32_LogicalDisk" {
		t.Errorf("Get of the class returned a %q", cls.Class)
	}
	disk := queryOne(t, c, ctx, "Win32_LogicalDisk")
	if disk.Path == "" {
		t.Fatalf("a Win32_LogicalDisk without a path: %v", disk.Props)
	}
	got, err := c.Get(ctx, wmi.NamespaceCIMv2, disk.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Class != disk.Class || got.Path != disk.Path || got.Props["Name"] != disk.Props["Name"] {
		t.Errorf("Get(%q) = %s %q %v, want %s %q %v", disk.Path, got.Class, got.Path, got.Props["Name"], disk.Class, disk.Path, disk.Props["Name"])
	}
}

// TestCallStaticMethod: StdRegProv.GetStringValue, a static method with
// in-parameters, returns ReturnValue 0 and the value as out-parameters.
func TestCallStaticMethod(t *testing.T) {
	c, ctx := newConn(t)
	out, err := c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue",
		wmi.Param{Name: "hDefKey", Value: hklm},
		wmi.Param{Name: "sSubKeyName", Value: `SOFTWARE\Microsoft\Windows NT\CurrentVersion`},
		wmi.Param{Name: "sValueName", Value: "ProductName"})
	if err != nil {
		t.Fatal(err)
	}
	if err := wmi.Result("StdRegProv.GetStringValue", out, wmi.Codes{}); err != nil {
		t.Fatal(err)
	}
	if s, ok := out.Props["sValue"].(string); !ok || s == "" {
		t.Errorf("sValue = %#v, want the product name", out.Props["sValue"])
	}
	if out.Path != "" {
		t.Errorf("out-parameters with a path %q", out.Path)
	}
}

// TestCallStringArrayOut: StdRegProv.EnumKey returns a string array.
func TestCallStringArrayOut(t *testing.T) {
	c, ctx := newConn(t)
	out, err := c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "EnumKey",
		wmi.Param{Name: "hDefKey", Value: hklm},
		wmi.Param{Name: "sSubKeyName", Value: `SOFTWARE`})
	if err != nil {
		t.Fatal(err)
	}
	if err := wmi.Result("StdRegProv.EnumKey", out, wmi.Codes{}); err != nil {
		t.Fatal(err)
	}
	names, ok := out.Props["sNames"].([]string)
	if !ok || !slices.ContainsFunc(names, func(s string) bool { return strings.EqualFold(s, "Microsoft") }) {
		t.Errorf("sNames = %#v, want a []string with Microsoft", out.Props["sNames"])
	}
}

// TestCallWritesAndReadsBack: a value set by one call (a string with
// characters beyond ASCII) is read back by another.
func TestCallWritesAndReadsBack(t *testing.T) {
	c, ctx := newConn(t)
	key := fmt.Sprintf(`Software\pipeguard-wmi-test-%d`, time.Now().UnixNano())
	call := func(method string, in ...wmi.Param) wmi.Object {
		t.Helper()
		out, err := c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", method, in...)
		if err != nil {
			t.Fatal(err)
		}
		if err := wmi.Result("StdRegProv."+method, out, wmi.Codes{}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	call("CreateKey", wmi.Param{Name: "hDefKey", Value: hkcu}, wmi.Param{Name: "sSubKeyName", Value: key})
	t.Cleanup(func() {
		_, _ = c.Call(context.Background(), wmi.NamespaceCIMv2, "StdRegProv", "DeleteKey",
			wmi.Param{Name: "hDefKey", Value: hkcu}, wmi.Param{Name: "sSubKeyName", Value: key})
	})
	want := `pipeguard ✓ "quoted" \ 'single' ünïcødé`
	call("SetStringValue", wmi.Param{Name: "hDefKey", Value: hkcu}, wmi.Param{Name: "sSubKeyName", Value: key},
		wmi.Param{Name: "sValueName", Value: "v"}, wmi.Param{Name: "sValue", Value: want})
	out := call("GetStringValue", wmi.Param{Name: "hDefKey", Value: hkcu}, wmi.Param{Name: "sSubKeyName", Value: key},
		wmi.Param{Name: "sValueName", Value: "v"})
	if got := out.Props["sValue"]; got != want {
		t.Errorf("read back %#v, want %q", got, want)
	}
}

// TestCallRefusesUnknownParameter: a parameter the method does not take
// is an error naming it.
func TestCallRefusesUnknownParameter(t *testing.T) {
	c, ctx := newConn(t)
	_, err := c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue",
		wmi.Param{Name: "hDefKey", Value: hklm},
		wmi.Param{Name: "sNoSuchParameter", Value: "x"})
	if err == nil || !strings.Contains(err.Error(), "sNoSuchParameter") {
		t.Fatalf("err = %v, want one naming sNoSuchParameter", err)
	}
	_, err = c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue",
		wmi.Param{Name: "hDefKey", Value: 1.5})
	if err == nil || !strings.Contains(err.Error(), "hDefKey") || !strings.Contains(err.Error(), "float64") {
		t.Fatalf("err = %v, want one naming hDefKey and its type", err)
	}
}

// TestErrors: failures are *wmi.Error naming the operation, and a missing
// instance is one IsNotFound reports.
func TestErrors(t *testing.T) {
	c, ctx := newConn(t)
	wantError := func(t *testing.T, what string, err error, op string) *wmi.Error {
		t.Helper()
		var e *wmi.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: err = %v (%T), want a *wmi.Error", what, err, err)
			return nil
		}
		if e.Op != op {
			t.Errorf("%s: Op %q, want %q (%v)", what, e.Op, op, err)
		}
		return e
	}
	for range 2 { // a failed connection is tried again
		_, err := c.Query(ctx, `root\pipeguardNoSuchNamespace`, "SELECT * FROM Win32_BIOS")
		if e := wantError(t, "invalid namespace", err, `connect to root\pipeguardNoSuchNamespace`); e != nil && e.HRESULT != wmi.WBEMEInvalidNS {
			t.Errorf("invalid namespace: %v, want WBEM_E_INVALID_NAMESPACE", err)
		}
	}
	t.Run("invalid class in a query", func(t *testing.T) {
		objs, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT * FROM Win32_PipeguardNoSuchClass")
		if err == nil && len(objs) == 0 && os.Getenv("PIPEGUARD_UNDER_WINE") == "1" {
			t.Skip("Wine's WMI answers a query of a class it does not have with no objects, not WBEM_E_INVALID_CLASS")
		}
		if e := wantError(t, "invalid class", err, "query of Win32_PipeguardNoSuchClass"); e != nil && e.HRESULT != wmi.WBEMEInvalidClass {
			t.Errorf("invalid class: %v, want WBEM_E_INVALID_CLASS", err)
		}
	})
	_, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT * FROM Win32_BIOS WHERE")
	if e := wantError(t, "malformed query", err, "query of Win32_BIOS"); e != nil && e.HRESULT != wmi.WBEMEInvalidQuery {
		t.Errorf("malformed query: %v, want WBEM_E_INVALID_QUERY", err)
	}
	_, err = c.Get(ctx, wmi.NamespaceCIMv2, `Win32_LogicalDisk.DeviceID="Q9:"`)
	wantError(t, "missing instance", err, `Get of Win32_LogicalDisk.DeviceID="Q9:"`)
	if !wmi.IsNotFound(err) {
		t.Errorf("missing instance: IsNotFound(%v) is false", err)
	}
	_, err = c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "NoSuchMethod")
	if e := wantError(t, "missing method", err, "StdRegProv.NoSuchMethod"); e != nil && e.HRESULT != wmi.WBEMEInvalidMethod {
		t.Errorf("missing method: %v, want WBEM_E_INVALID_METHOD", err)
	}
}

// TestCallsEndWithTheirContext: a call whose context has ended, or ends
// at once, returns the context's error promptly.
func TestCallsEndWithTheirContext(t *testing.T) {
	c, _ := newConn(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		calls := map[string]func() error{
			"Query": func() error {
				_, err := c.Query(tc.ctx, wmi.NamespaceCIMv2, "SELECT * FROM Win32_OperatingSystem")
				return err
			},
			"Get": func() error { _, err := c.Get(tc.ctx, wmi.NamespaceCIMv2, "Win32_OperatingSystem"); return err },
			"Call": func() error {
				_, err := c.Call(tc.ctx, wmi.NamespaceCIMv2, "StdRegProv", "EnumKey",
					wmi.Param{Name: "hDefKey", Value: hklm}, wmi.Param{Name: "sSubKeyName", Value: "SOFTWARE"})
				return err
			},
		}
		for name, f := range calls {
			start := time.Now()
			err := f()
			if !errors.Is(err, tc.want) {
				t.Errorf("%s: err = %v, want %v", name, err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%s took %s to see its context had ended", name, d)
			}
		}
	}
}

// TestConcurrentQueries: many goroutines' queries all succeed, more than
// there are workers.
func TestConcurrentQueries(t *testing.T) {
	c, ctx := newConn(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			class := []string{"Win32_OperatingSystem", "Win32_BIOS", "Win32_LogicalDisk", "Win32_ComputerSystem"}[i%4]
			objs, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT Name FROM "+class)
			if err == nil && (len(objs) == 0 || objs[0].Class != class) {
				err = fmt.Errorf("query of %s returned %d objects", class, len(objs))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSecretsStayOutOfErrors: an in-parameter's value is in no error,
// whatever fails.
func TestSecretsStayOutOfErrors(t *testing.T) {
	c, ctx := newConn(t)
	const secret = "pipeguard-SECRET-value-7f3a"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	type call struct {
		ctx              context.Context
		ns, path, method string
		in               []wmi.Param
	}
	for _, tc := range []call{
		{ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "hDefKey", Value: hklm}, {Name: "sPassword", Value: secret}}},
		{ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "hDefKey", Value: secret}}},
		{ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "sSubKeyName", Value: []string{secret}}}},
		{ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "sSubKeyName", Value: secret + "\x00"}}},
		{ctx, wmi.NamespaceCIMv2, "StdRegProv", "NoSuchMethod", []wmi.Param{{Name: "sValue", Value: secret}}},
		{ctx, wmi.NamespaceCIMv2, "Win32_PipeguardNoSuchClass", "M", []wmi.Param{{Name: "sValue", Value: secret}}},
		{ctx, `root\pipeguardNoSuchNamespace`, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "sValue", Value: secret}}},
		{cancelled, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue", []wmi.Param{{Name: "sValue", Value: secret}}},
	} {
		_, err := c.Call(tc.ctx, tc.ns, tc.path, tc.method, tc.in...)
		if err == nil {
			t.Errorf("%s.%s(%s) succeeded, want an error", tc.path, tc.method, tc.in[0].Name)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%#v", err), secret) {
			t.Errorf("%s.%s: the error holds the secret: %v", tc.path, tc.method, err)
		}
	}
}
