package app

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// TestFailingFixtureExitsWithTwo checks that an agent whose Fixture cannot
// be loaded refuses to start, saying why, rather than falling back to the
// machine's Win32 or WMI calls.
func TestFailingFixtureExitsWithTwo(t *testing.T) {
	cases := map[string]struct {
		fixture func(loaded *int) Fixture
		want    string
	}{
		"no Win32 fixture file": {
			fixture: func(loaded *int) Fixture {
				return Fixture{Win32: func() (win32.Sys, error) {
					*loaded++
					return nil, errors.New("this is a test build whose Win32 calls go to a fixture, and PIPEGUARD_WIN32_FIXTURE is not set")
				}}
			},
			want: `"msg":"invalid configuration: the Win32 fixture of this test build could not be loaded","error":"this is a test build whose Win32 calls go to a fixture, and PIPEGUARD_WIN32_FIXTURE is not set"`,
		},
		"garbage in the Win32 fixture file": {
			fixture: func(loaded *int) Fixture {
				return Fixture{Win32: func() (win32.Sys, error) {
					*loaded++
					return nil, errors.New(`PIPEGUARD_WIN32_FIXTURE=C:\f.json: decoding the JSON: invalid character 'x' looking for beginning of value`)
				}}
			},
			want: `decoding the JSON: invalid character 'x' looking for beginning of value`,
		},
		"a WMI fixture that cannot be made": {
			fixture: func(loaded *int) Fixture {
				return Fixture{WMI: func() (wmi.Conn, error) { *loaded++; return nil, errors.New("disks[0]: partitionStyle") }}
			},
			want: `"msg":"invalid configuration: the WMI fixture of this test build could not be loaded","error":"disks[0]: partitionStyle"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// A short socket dir: unix socket paths are short.
			sockets, err := os.MkdirTemp("", "pg")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(sockets) })
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // an agent that started would stop at once, with 0
			loaded := 0
			c := NewCommand(ctx)
			c.Fixture = tc.fixture(&loaded)
			code, stderr := startCommand(ctx, c, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--audit-log-path", t.TempDir()+"/audit.log",
				"--kubelet-path", t.TempDir(), "--socket-dir", sockets)
			if code != 2 || loaded != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d after %d fixture loads, want 2 after 1, and stderr holding %s:\n%s", code, loaded, tc.want, stderr)
			}
			if strings.Contains(stderr, `"listening"`) {
				t.Fatalf("the agent listened with no fixture:\n%s", stderr)
			}
		})
	}
}

// TestFixtureIsLogged: an agent given a Fixture first logs that its host
// calls go to a fixture, never to run on a node. (Its context is done
// before it starts: it stops at once, whatever it gets to.)
func TestFixtureIsLogged(t *testing.T) {
	sockets, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := NewCommand(ctx)
	c.Fixture = Fixture{Win32: func() (win32.Sys, error) { return win32.New(), nil }}
	_, stderr := startCommand(ctx, c, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--audit-log-path", t.TempDir()+"/audit.log",
		"--kubelet-path", t.TempDir(), "--socket-dir", sockets)
	want := `"msg":"test build: the Win32 calls of the disk, volume and smb groups go to a fixture, not only to this machine; never run this build on a node"}`
	if first, _, _ := strings.Cut(stderr, "\n"); !strings.HasSuffix(first, want) {
		t.Fatalf("the log does not start with %s:\n%s", want, stderr)
	}
}
