//go:build windows

package wmi

import (
	"context"
	"os"
	"testing"
	"time"
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
	t.Logf("semisynchronous %v, in this process %v", s.semisync, s.inproc)
	underWine := os.Getenv("PIPEGUARD_UNDER_WINE") == "1"
	if underWine && (s.semisync || !s.inproc) {
		t.Errorf("under Wine: semisynchronous %v, in this process %v; want false, true", s.semisync, s.inproc)
	}
	if !underWine && (!s.semisync || s.inproc) {
		t.Errorf("on Windows: semisynchronous %v, in this process %v; want true, false", s.semisync, s.inproc)
	}
}
