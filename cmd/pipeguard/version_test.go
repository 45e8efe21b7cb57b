package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersionAndGroupHelp: the version and the help of each command group
// answer with exit 0, as kubectl's do.
func TestVersionAndGroupHelp(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "pipeguard ") || !strings.Contains(out.String(), "(revision ") {
			t.Errorf("%v: exit %d, %q %q", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{"policy", "-h"}, {"audit", "--help"}} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != exitOK || !strings.Contains(out.String(), "pipeguard audit verify [PATH|-] [--kubeconfig FILE --node NODE]") {
			t.Errorf("%v: exit %d, %q %q", args, code, out.String(), errb.String())
		}
	}
}
