package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	hostsys "github.com/pipeguard/pipeguard/agent/hostops/system"
)

// recordingSystem is the system group's host operations, recording calls.
type recordingSystem struct {
	mu  sync.Mutex
	log []string
}

func (s *recordingSystem) record(call ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, strings.Join(call, " "))
}

func (s *recordingSystem) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *recordingSystem) BIOSSerialNumber(context.Context) (string, error) {
	s.record("BIOSSerialNumber")
	return "serial", nil
}

func (s *recordingSystem) StartService(_ context.Context, name string) error {
	s.record("StartService", name)
	return nil
}

func (s *recordingSystem) StopService(_ context.Context, name string, force bool) error {
	s.record("StopService", name, fmt.Sprint(force))
	return nil
}

func (s *recordingSystem) GetService(_ context.Context, name string) (hostsys.Service, error) {
	s.record("GetService", name)
	return hostsys.Service{DisplayName: name}, nil
}

// StopService with force may stop the services that depend on an allowed
// service only when they are allowed too, compared as Windows compares
// service names.
func TestForceStopReachesOnlyAllowedServices(t *testing.T) {
	may := allowedService([]string{"csiproxy-helper", "SMBHelper"})
	for name, want := range map[string]bool{"CSIProxy-Helper": true, "smbhelper": true, "Netlogon": false, "": false, "csiproxy-helper2": false} {
		if got := may(name); got != want {
			t.Errorf("may stop %q = %v, want %v", name, got, want)
		}
	}
	if allowedService(nil)("anything") {
		t.Error("with no allowed services, a dependent may be stopped")
	}
}
