package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/internal/testing/comparetest"
)

// withSides makes pipeguard-agent compare read csi and pg; a nil csi is a
// CSI Proxy that is not there.
func withSides(t *testing.T, csi, pg *comparetest.Side) {
	t.Helper()
	dial, local := dialCSIProxy, localSide
	t.Cleanup(func() { dialCSIProxy, localSide = dial, local })
	dialCSIProxy = func(prefix string) (compare.Conns, error) {
		if csi == nil {
			return compare.Conns{}, &compare.UnreachableError{Pipe: compare.PipePath(prefix, "disk"), Err: errors.New("The system cannot find the file specified.")}
		}
		return csi.Conns(), nil
	}
	localSide = func(string) (compare.Conns, error) { return pg.Conns(), nil }
}

func runCompareTest(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runCompare(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCompareExitCodes(t *testing.T) {
	kubelet := t.TempDir()
	t.Run("identical", func(t *testing.T) {
		withSides(t, comparetest.Node(), comparetest.Node())
		code, out, errOut := runCompareTest("--kubelet-path", kubelet)
		if code != 0 || !strings.Contains(out, "pipeguard answers as CSI Proxy does") || errOut != "" {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("different", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Serial = "other"
		withSides(t, csi, comparetest.Node())
		code, out, _ := runCompareTest("--kubelet-path", kubelet, "-o", "json")
		var r compare.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if code != 1 || r.Identical || r.Differ != 1 {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		withSides(t, nil, comparetest.Node())
		code, out, errOut := runCompareTest("--kubelet-path", kubelet)
		want := `pipeguard-agent compare: no CSI Proxy on \\.\pipe\csi-proxy-disk-v1: is CSI Proxy running? (sc.exe query csiproxy, or its DaemonSet's pods on this node) (The system cannot find the file specified.)`
		if code != 2 || out != "" || strings.TrimSpace(errOut) != want {
			t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
		}
	})
	t.Run("unavailable mid-way", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Errors = map[string]error{"GetBIOSSerialNumber": unavailable{}}
		withSides(t, csi, comparetest.Node())
		code, _, errOut := runCompareTest("--kubelet-path", kubelet)
		if code != 2 || !strings.Contains(errOut, "CSI Proxy could not be reached for 1 of 17 calls (first: system.GetBIOSSerialNumber): is CSI Proxy running? (sc.exe query csiproxy)") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("hung", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Hang = map[string]bool{"ListDiskLocations": true, "ListDiskIDs": true, "GetDiskStats": true, "ListVolumesOnDisk": true}
		withSides(t, csi, comparetest.Node())
		code, out, errOut := runCompareTest("--kubelet-path", kubelet, "--timeout", "50ms")
		if code != 2 || !strings.Contains(errOut, "CSI Proxy could not be reached for 14 of 17 calls (first: disk.GetDiskStats disk 1)") || !strings.Contains(out, "CSI Proxy stopped answering") {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	for name, args := range map[string][]string{
		"bad output":  {"-o", "yaml"},
		"bad timeout": {"--timeout", "0s"},
		"argument":    {"extra"},
		"bad flag":    {"--nope"},
	} {
		t.Run(name, func(t *testing.T) {
			withSides(t, comparetest.Node(), comparetest.Node())
			if code, out, errOut := runCompareTest(args...); code != 2 || out != "" || errOut == "" {
				t.Errorf("exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

type unavailable struct{}

func (unavailable) Error() string { return "down" }

// GRPCStatus makes the error a gRPC Unavailable.
func (unavailable) GRPCStatus() *grpcStatus { return grpcUnavailable("connection refused") }

// TestCompareNeedsWindows: off Windows, with no test seam, compare says
// it needs Windows and exits 2; run dispatches it and leaves the agent's
// flags alone.
func TestCompareNeedsWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has named pipes")
	}
	var stderr bytes.Buffer
	if code := run([]string{"compare", "--timeout", "1s"}, &stderr); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "pipeguard-agent compare needs Windows: it reads CSI Proxy's named pipes on the node (this is " + runtime.GOOS + "); run it on the Windows node, where CSI Proxy still runs\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	stderr.Reset()
	if code := run([]string{"--compare"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "flag provided but not defined: -compare") {
		t.Errorf("the agent's flags changed: exit %d %s", code, stderr.String())
	}
}

type grpcStatus = status.Status

func grpcUnavailable(msg string) *grpcStatus { return status.New(codes.Unavailable, msg) }
