package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/compare"
	"github.com/pipeguard/pipeguard/internal/testing/comparetest"
)

// compareCommand is pipeguard-agent whose compare reads csi and pg; a nil
// csi is a CSI Proxy that is not there.
type compareCommand struct{ csi, pg *comparetest.Side }

// run runs pipeguard-agent compare with args.
func (s compareCommand) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	c := NewCommand(context.Background())
	c.Stdout, c.Stderr = &out, &errOut
	c.dialCSIProxy = func(prefix string) (compare.Conns, error) {
		if s.csi == nil {
			return compare.Conns{}, &compare.UnreachableError{Pipe: compare.PipePath(prefix, "disk"), Err: errors.New("The system cannot find the file specified.")}
		}
		return s.csi.Conns(), nil
	}
	c.localSide = func(string) (compare.Conns, error) { return s.pg.Conns(), nil }
	code = c.Execute(append([]string{"compare"}, args...))
	return code, out.String(), errOut.String()
}

func TestCompareExitCodes(t *testing.T) {
	kubelet := t.TempDir()
	t.Run("identical", func(t *testing.T) {
		code, out, errOut := compareCommand{comparetest.Node(), comparetest.Node()}.run("--kubelet-path", kubelet)
		if code != 0 || !strings.Contains(out, "pipeguard answers as CSI Proxy does") || errOut != "" {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("different", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Serial = "other"
		code, out, _ := compareCommand{csi, comparetest.Node()}.run("--kubelet-path", kubelet, "-o", "json")
		var r compare.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if code != 1 || r.Identical || r.Differ != 1 {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		code, out, errOut := compareCommand{nil, comparetest.Node()}.run("--kubelet-path", kubelet)
		want := `pipeguard-agent compare: no CSI Proxy on \\.\pipe\csi-proxy-disk-v1: is CSI Proxy running? (sc.exe query csiproxy, or its DaemonSet's pods on this node) (The system cannot find the file specified.)`
		if code != 2 || out != "" || strings.TrimSpace(errOut) != want {
			t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
		}
	})
	t.Run("unavailable mid-way", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Errors = map[string]error{"GetBIOSSerialNumber": unavailable{}}
		code, _, errOut := compareCommand{csi, comparetest.Node()}.run("--kubelet-path", kubelet)
		if code != 2 || !strings.Contains(errOut, "CSI Proxy could not be reached for 1 of 17 calls (first: system.GetBIOSSerialNumber): is CSI Proxy running? (sc.exe query csiproxy)") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("hung", func(t *testing.T) {
		csi := comparetest.Node()
		csi.Hang = map[string]bool{"ListDiskLocations": true, "ListDiskIDs": true, "GetDiskStats": true, "ListVolumesOnDisk": true}
		code, out, errOut := compareCommand{csi, comparetest.Node()}.run("--kubelet-path", kubelet, "--timeout", "50ms")
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
			if code, out, errOut := (compareCommand{comparetest.Node(), comparetest.Node()}).run(args...); code != 2 || out != "" || errOut == "" {
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
// it needs Windows and exits 2; the command dispatches it and leaves the
// agent's flags alone.
func TestCompareNeedsWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has named pipes")
	}
	var stderr bytes.Buffer
	c := NewCommand(context.Background())
	c.Stdout, c.Stderr = &bytes.Buffer{}, &stderr
	if code := c.Execute([]string{"compare", "--timeout", "1s"}); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "pipeguard-agent compare needs Windows: it reads CSI Proxy's named pipes on the node (this is " + runtime.GOOS + "); run it on the Windows node, where CSI Proxy still runs\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

type grpcStatus = status.Status

func grpcUnavailable(msg string) *grpcStatus { return status.New(codes.Unavailable, msg) }

// TestCompareFlags parses pipeguard-agent compare's flags into its
// options, and checks them as the command does.
func TestCompareFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want CompareOptions
		err  string
	}{
		"defaults": {want: CompareOptions{Output: "table", Timeout: compare.DefaultTimeout, KubeletPath: defaultKubeletPath(), PipePrefix: "csi-proxy-"}},
		"every flag": {args: []string{"-o", "json", "--timeout", "5s", "--kubelet-path", "/k", "-pipe-prefix=p-", "--service", "csiproxy", "--service=kubelet"},
			want: CompareOptions{Output: "json", Timeout: 5 * time.Second, KubeletPath: "/k", PipePrefix: "p-", Services: []string{"csiproxy", "kubelet"}}},
		"bad output":      {args: []string{"-o", "yaml"}, err: `-o "yaml": give table or json`},
		"zero timeout":    {args: []string{"--timeout", "0s"}, err: "--timeout 0s: must be positive"},
		"no kubelet path": {args: []string{"--kubelet-path="}, err: "--kubelet-path is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			var o CompareOptions
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Validate: %v, want %s", err, tc.err)
				}
				code, _, stderr := compareCommand{comparetest.Node(), comparetest.Node()}.run(tc.args...)
				if want := "pipeguard-agent compare: " + tc.err + "\n"; code != 2 || stderr != want {
					t.Errorf("compare: exit %d, stderr %q; want 2, %q", code, stderr, want)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(o, tc.want) {
				t.Errorf("options %+v (%v), want %+v", o, err, tc.want)
			}
		})
	}
}
