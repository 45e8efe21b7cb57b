//go:build windows

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || o != (options{rounds: 10, calls: 200, timeout: 2 * time.Minute}) {
		t.Fatalf("defaults: %+v, %v; want 10 rounds of 200 calls, 2m each", o, err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no rounds":       {[]string{"-rounds", "0"}, "hostbench: -rounds 0 is out of range: give 1 to 1000\n"},
		"too many rounds": {[]string{"-rounds", "1001"}, "hostbench: -rounds 1001 is out of range: give 1 to 1000\n"},
		"negative calls":  {[]string{"-calls", "-5"}, "hostbench: -calls -5 is out of range: give 1 to 10000\n"},
		"too many calls":  {[]string{"-calls", "99999999"}, "hostbench: -calls 99999999 is out of range: give 1 to 10000\n"},
		"no deadline":     {[]string{"-timeout", "0s"}, "hostbench: -timeout 0s is not positive: give the deadline of each call, e.g. 2m\n"},
		"an argument":     {[]string{"-rounds", "2", "extra"}, "hostbench: unexpected argument \"extra\": hostbench takes flags only (-rounds, -calls, -timeout)\n"},
		"not a number":    {[]string{"-calls", "many"}, "invalid value \"many\" for flag -calls: parse error\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			if _, err := parseFlags(tc.args, &stderr); err == nil {
				t.Fatalf("%v was accepted", tc.args)
			}
			if !strings.HasPrefix(stderr.String(), tc.want) {
				t.Fatalf("stderr = %q, want it to start with %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestRunExitsTwoOnABadFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-calls", "0"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout = %q, want nothing: no round ran", stdout.String())
	}
}
