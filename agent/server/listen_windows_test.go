package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"

	"github.com/pipeguard/pipeguard/internal/testing/platform"
)

// listenTestPipe listens on a pipe of the test's own with sddl and accepts
// (and drops) connections until the test ends.
func listenTestPipe(t *testing.T, sddl string) string {
	t.Helper()
	version := fmt.Sprintf("t%d%d", os.Getpid(), time.Now().UnixNano()%1e6)
	l, err := Listen(context.Background(), ListenOptions{SDDL: sddl}, "sddltest", version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return PipePath("sddltest", version)
}

// TestPipeCarriesItsSecurityDescriptor reads the DACL back from a pipe the
// agent created: it is protected (no inherited entries) and grants exactly
// SYSTEM, Administrators and container administrators.
func TestPipeCarriesItsSecurityDescriptor(t *testing.T) {
	path := listenTestPipe(t, DefaultSDDL)
	p16, err := windows.UTF16PtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p16, windows.READ_CONTROL, 0, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer windows.CloseHandle(h)
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatalf("reading the security descriptor of %s: %v", path, err)
	}
	got := sd.String()
	for _, want := range []string{"D:P", ";;;SY)", ";;;BA)", ";;;S-1-5-93-2-1)"} {
		if !strings.Contains(got, want) {
			t.Errorf("DACL %q lacks %q", got, want)
		}
	}
	if n := strings.Count(got, "(A;"); n != 3 {
		t.Errorf("DACL %q has %d allow entries, want 3", got, n)
	}
	if strings.Contains(got, "(D;") || strings.Contains(got, ";;;WD)") || strings.Contains(got, ";;;BU)") {
		t.Errorf("DACL %q names more than the three principals", got)
	}
	t.Logf("DACL read back: %s", got)
}

// TestPipeDACLKeepsOthersOut connects to a pipe whose DACL admits SYSTEM
// alone, as a process that is not SYSTEM. Windows refuses the connection.
// Wine 8 does not check a named pipe's DACL when a client opens it: there
// the connection succeeds, and the test asserts that, so that the day Wine
// changes is noticed (docs/windows.md lists what Wine does not check).
func TestPipeDACLKeepsOthersOut(t *testing.T) {
	path := listenTestPipe(t, "D:P(A;;GA;;;SY)")
	timeout := 5 * time.Second
	c, err := winio.DialPipe(path, &timeout)
	if c != nil {
		c.Close()
	}
	if platform.UnderWine() {
		if err != nil {
			t.Fatalf("under Wine, connecting to a pipe outside its DACL failed (%v): Wine now checks pipe DACLs; update docs/windows.md and this test", err)
		}
		t.Log("Wine does not check the pipe's DACL: a caller outside it connected")
		return
	}
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		t.Fatalf("connecting to a pipe outside its DACL: %v, want access denied", err)
	}
}
