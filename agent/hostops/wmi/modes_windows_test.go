//go:build windows

package wmi

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	ole "github.com/go-ole/go-ole"
)

// TestConnectionModes: how the host's WMI takes calls. Windows' WMI is a
// service behind a COM proxy that answers GetObject and ExecMethod
// semisynchronously; Wine's runs in the process and answers synchronously.
func TestConnectionModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var s *service
	err := do(ctx, func(ctx context.Context) error {
		var err error
		s, err = connect(ctx, NamespaceCIMv2)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hr, _, _ := procCoSetProxyBlanket.Call(uintptr(unsafe.Pointer(s.svc)),
		rpcCAuthnWinNT, rpcCAuthzNone, 0,
		rpcCAuthnLevelPktPrivacy, rpcCImpLevelImpersonate, 0, eoacNone)
	t.Logf("semisynchronous %v, in this process %v, CoSetProxyBlanket 0x%08X", s.semisync, s.inproc, uint32(hr))
	underWine := os.Getenv("PIPEGUARD_UNDER_WINE") == "1"
	if underWine && (s.semisync || !s.inproc) {
		t.Errorf("under Wine: semisynchronous %v, in this process %v; want false, true", s.semisync, s.inproc)
	}
	if !underWine && (!s.semisync || s.inproc) {
		t.Errorf("on Windows: semisynchronous %v, in this process %v; want true, false", s.semisync, s.inproc)
	}
}

// TestCallsWaitForAWorkerUntilTheirContextEnds: with every worker busy, a
// call waits for one and returns its context's error when that ends; a
// call whose work outlasts its context returns at its end, its worker
// still busy; once the Workers are free, calls run again.
func TestCallsWaitForAWorkerUntilTheirContextEnds(t *testing.T) {
	if err := do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err) // the Workers are started
	}
	busy := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(busy) }) }
	defer free()
	started := make(chan struct{}, Workers)
	var wg sync.WaitGroup
	for range Workers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := do(ctx, func(context.Context) error {
				started <- struct{}{}
				<-busy // a provider that does not answer
				return nil
			})
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
				t.Errorf("a call outlasting its context: %v after %s, want DeadlineExceeded at its deadline", err, time.Since(start))
			}
		})
	}
	for range Workers {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the Workers did not all take a call")
		}
	}
	wg.Wait() // every caller has returned; every worker is still busy
	c, _ := New()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_OperatingSystem")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("a call with every worker busy: %v after %s, want DeadlineExceeded at its deadline", err, time.Since(start))
	}
	free()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	if _, err := c.Query(ctx2, NamespaceCIMv2, "SELECT * FROM Win32_OperatingSystem"); err != nil {
		t.Errorf("once the Workers are free: %v", err)
	}
}

// TestNoGoroutineGrowth: calls, failed and cut ones among them, leave no
// goroutine behind them.
func TestNoGoroutineGrowth(t *testing.T) {
	c, _ := New()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_BIOS"); err != nil { // starts the Workers
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	cut, cancelCut := context.WithCancel(context.Background())
	cancelCut()
	for range 50 {
		_, _ = c.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_BIOS")
		_, _ = c.Get(ctx, NamespaceCIMv2, `Win32_LogicalDisk.DeviceID="Q9:"`)
		_, _ = c.Call(ctx, NamespaceCIMv2, "StdRegProv", "EnumKey", Param{Name: "hDefKey", Value: uint32(0x80000002)}, Param{Name: "sSubKeyName", Value: "SOFTWARE"})
		_, _ = c.Query(cut, NamespaceCIMv2, "SELECT * FROM Win32_BIOS")
		short, cancelShort := context.WithTimeout(ctx, time.Microsecond)
		_, _ = c.Get(short, NamespaceCIMv2, "Win32_OperatingSystem")
		cancelShort()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		// Poll under the deadline for the goroutines to end; the pause only spares the CPU.
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the calls, %d before", n, before)
	}
}

// TestEmbeddedObject: an object held in a property (VT_UNKNOWN, CIM type
// object) reads as an Object, to a bounded depth.
func TestEmbeddedObject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := onService(ctx, NamespaceCIMv2, func(ctx context.Context, s *service) error {
		o, hr, err := s.getObject(ctx, "Win32_OperatingSystem")
		if err != nil {
			return err
		}
		if hr != 0 {
			return &Error{Op: "Get of Win32_OperatingSystem", HRESULT: hr}
		}
		defer o.release()
		v := ole.NewVariant(ole.VT_UNKNOWN, 0)
		*(**object)(unsafe.Pointer(&v.Val)) = o // borrowed: v is not cleared
		got, err := value(&v, cimObject, 0)
		if err != nil {
			return err
		}
		emb, ok := got.(Object)
		if !ok || emb.Class != "Win32_OperatingSystem" {
			t.Errorf("embedded object read as %#v", got)
		} else if _, ok := emb.Props["Caption"]; !ok {
			t.Errorf("embedded object without its Caption: %v", emb.Props)
		}
		if _, err := value(&v, cimObject, maxDepth); err == nil || !strings.Contains(err.Error(), "deeper") {
			t.Errorf("an object nested too deep: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueryBoundedByMaxObjects: a query that would return more objects
// than the bound fails, saying so.
func TestQueryBoundedByMaxObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _ := New()
	all, err := c.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_LogicalDisk")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Skipf("the host has %d logical disk, the test needs 2", len(all))
	}
	below := comConn{maxObjects: len(all) - 1}
	_, err = below.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_LogicalDisk")
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a query past the bound: %v, want an error saying it returned more than %d objects", err, below.maxObjects)
	}
	c = comConn{maxObjects: len(all)}
	if got, err := c.Query(ctx, NamespaceCIMv2, "SELECT * FROM Win32_LogicalDisk"); err != nil || len(got) != len(all) {
		t.Errorf("a query at the bound: %d objects, %v", len(got), err)
	}
}
