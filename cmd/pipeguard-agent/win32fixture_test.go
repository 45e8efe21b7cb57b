//go:build !(wine && windows)

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// TestShippedBuildHasNoWin32Fixture checks that nothing but the test build
// for Wine (-tags wine, win32fixture_wine.go) can send the agent's Win32
// calls anywhere but to the machine.
func TestShippedBuildHasNoWin32Fixture(t *testing.T) {
	if win32Fixture != nil {
		t.Fatal("win32Fixture is set in a build without the tags wine and windows: the shipped agent would answer Win32 calls from a fixture")
	}
}

// TestShippedBuildHasNoWMIFixture: likewise, nothing but the test build for
// Wine (wmifixture_wine.go) can answer the agent's WMI calls from a fixture.
func TestShippedBuildHasNoWMIFixture(t *testing.T) {
	if wmiFixture != nil {
		t.Fatal("wmiFixture is set in a build without the tags wine and windows: the shipped agent would answer its WMI calls from a fixture")
	}
}

// TestFailingWin32FixtureExitsWithTwo checks that a test build whose
// fixture cannot be loaded refuses to start, saying why, rather than
// falling back to the machine's Win32 calls.
func TestFailingWin32FixtureExitsWithTwo(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"no fixture file": {
			err:  errors.New("this is a test build (-tags wine) whose Win32 calls go to a fixture, and PIPEGUARD_WIN32_FIXTURE is not set"),
			want: `"msg":"invalid configuration: the Win32 fixture of this test build could not be loaded","error":"this is a test build (-tags wine) whose Win32 calls go to a fixture, and PIPEGUARD_WIN32_FIXTURE is not set"`,
		},
		"garbage in the file": {
			err:  errors.New(`PIPEGUARD_WIN32_FIXTURE=C:\f.json: decoding the JSON: invalid character 'x' looking for beginning of value`),
			want: `decoding the JSON: invalid character 'x' looking for beginning of value`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			called := 0
			win32Fixture = func() (win32.Sys, error) { called++; return nil, tc.err }
			t.Cleanup(func() { win32Fixture = nil })
			// A short socket dir: unix socket paths are short.
			sockets, err := os.MkdirTemp("", "pg")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(sockets) })
			var stderr bytes.Buffer
			cfg, _, ok := parseFlags([]string{"--metrics-bind-address", "0", "--audit-log-path", t.TempDir() + "/audit.log",
				"--kubelet-path", t.TempDir(), "--socket-dir", sockets}, &stderr)
			if !ok {
				t.Fatal(stderr.String())
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // an agent that started would stop at once, with 0
			code := serve(ctx, cfg, &stderr, nil)
			if code != 2 || called != 1 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d after %d fixture loads, want 2 after 1, and stderr holding %s:\n%s", code, called, tc.want, stderr.String())
			}
			if strings.Contains(stderr.String(), `"listening"`) {
				t.Fatalf("the agent listened with no fixture:\n%s", stderr.String())
			}
		})
	}
}
