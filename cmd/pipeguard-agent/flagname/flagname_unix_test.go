//go:build !windows

package flagname_test

import (
	"testing"

	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-agent/flagname"
)

func TestFlagOfTheSocketDir(t *testing.T) {
	if got, ok := flagname.Of(server.OptionSocketDir); !ok || got != "--socket-dir" {
		t.Errorf("Of(%q) = %q, %v; want --socket-dir", server.OptionSocketDir, got, ok)
	}
}
