package wmi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// callRecorder is a Conn that answers every Call with out and records
// where it was sent.
type callRecorder struct {
	wmi.Unsupported
	out                     wmi.Object
	namespace, path, method string
}

func (c *callRecorder) Call(_ context.Context, namespace, path, method string, _ ...wmi.Param) (wmi.Object, error) {
	c.namespace, c.path, c.method = namespace, path, method
	return c.out, nil
}

// TestRunWithoutAConnRunsNothing: a host operation given no connection
// fails closed, naming the operation, and never runs.
func TestRunWithoutAConnRunsNothing(t *testing.T) {
	ran := false
	err := wmi.Run(context.Background(), nil, nil, "MSFT_Volume.Format", func(context.Context) error { ran = true; return nil })
	if ran || !errors.Is(err, wmi.ErrNoConn) {
		t.Fatalf("ran %v, err %v; want ErrNoConn and nothing run", ran, err)
	}
	if got, want := err.Error(), "MSFT_Volume.Format: no WMI connection (WMI.Conn is nil), so nothing on the host is read or changed"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if err := wmi.Run(context.Background(), &callRecorder{}, nil, "x", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("with a connection: ran %v, err %v", ran, err)
	}
}

// TestInvokeReadsTheReturnValue: Invoke sends the method of its op to
// the object's path, or to the class for a static method, and no answer
// reads as success unless its ReturnValue is 0.
func TestInvokeReadsTheReturnValue(t *testing.T) {
	ctx := context.Background()
	c := &callRecorder{out: wmi.Object{Props: map[string]any{"ReturnValue": uint32(0)}}}
	if _, err := wmi.Invoke(ctx, c, wmi.NamespaceSMB, "", "MSFT_SmbGlobalMapping.Create", wmi.Codes{}); err != nil {
		t.Fatal(err)
	}
	if c.namespace != wmi.NamespaceSMB || c.path != "MSFT_SmbGlobalMapping" || c.method != "Create" {
		t.Fatalf("static method sent to %s %s %s", c.namespace, c.path, c.method)
	}
	if _, err := wmi.Invoke(ctx, c, wmi.NamespaceStorage, `MSFT_Volume.ObjectId="{1}"`, "MSFT_Volume.Format", wmi.Codes{}); err != nil || c.path != `MSFT_Volume.ObjectId="{1}"` || c.method != "Format" {
		t.Fatalf("instance method: %v, sent to %s %s", err, c.path, c.method)
	}
	c.out = wmi.Object{Props: map[string]any{}}
	if _, err := wmi.Invoke(ctx, c, wmi.NamespaceStorage, "", "MSFT_Disk.Online", wmi.Codes{}); err == nil {
		t.Fatal("an answer without a ReturnValue read as success")
	}
}

// TestCodesOfAnotherAPI: where the storage management codes mean other
// things, a code the method's table leaves out is reported by number
// alone, not with a storage meaning.
func TestCodesOfAnotherAPI(t *testing.T) {
	out := wmi.Object{Props: map[string]any{"ReturnValue": uint32(5)}}
	codes := wmi.Codes{NoCommon: true, Text: map[uint32]string{53: "The network path was not found"}}
	if got, want := wmi.Result("MSFT_SmbGlobalMapping.Create", out, codes).Error(), "MSFT_SmbGlobalMapping.Create returned 5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := wmi.Result("MSFT_Disk.Online", out, wmi.Codes{}).Error(), "MSFT_Disk.Online returned 5 (Invalid Parameter)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	out.Props["ReturnValue"] = uint32(53)
	if got, want := wmi.Result("MSFT_SmbGlobalMapping.Create", out, codes).Error(), "MSFT_SmbGlobalMapping.Create returned 53 (The network path was not found)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
