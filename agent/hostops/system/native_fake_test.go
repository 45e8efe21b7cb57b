package system

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// fakeSCM is a service control manager for the tests of the portable
// logic: services with states that move as a script says, dependencies, and
// a log of what was asked of it.
type fakeSCM struct {
	mu       sync.Mutex
	services map[string]*fakeService // by lower-case name
	log      []string
	// transitive makes activeDependents list the services that depend on
	// a service indirectly too, deepest first, as Windows may.
	transitive bool
	// hook, when set, runs after each call is logged, with the lock held:
	// it may change the services, as the node changes under a call.
	hook func(entry string)
}

// fakeService is one service. After a start or stop, state() walks
// through the states of the script, one per call, and stays on the last.
type fakeService struct {
	name, display string
	startType     uint32
	state         uint32
	dependsOn     []string
	// afterStart and afterStop are the states a start or a stop leads
	// through; nil means straight to Running or Stopped.
	afterStart, afterStop []uint32
	// stopErrs are answered to the stop controls, in turn, before any
	// succeeds.
	stopErrs []error
	script   []uint32
}

func newFakeSCM(services ...*fakeService) *fakeSCM {
	f := &fakeSCM{services: map[string]*fakeService{}}
	for _, s := range services {
		f.services[strings.ToLower(s.name)] = s
	}
	return f
}

func (f *fakeSCM) connect() (win32.Services, error) { return f, nil }

func (f *fakeSCM) record(format string, args ...any) {
	entry := fmt.Sprintf(format, args...)
	f.log = append(f.log, entry)
	if f.hook != nil {
		f.hook(entry)
	}
}

// calls returns the log entries that start with one of prefixes.
func (f *fakeSCM) calls(prefixes ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, l := range f.log {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func (f *fakeSCM) stateOf(name string) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.services[strings.ToLower(name)].state
}

func (f *fakeSCM) Open(name string, a win32.ServiceAccess) (win32.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("open %s %s", name, [...]string{"query", "start", "stop"}[a])
	s, ok := f.services[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("OpenService: %w", win32.ErrNoSuchService)
	}
	return &fakeHandle{f: f, s: s}, nil
}

func (f *fakeSCM) Close() error { return nil }

type fakeHandle struct {
	f *fakeSCM
	s *fakeService
}

func (h *fakeHandle) Config() (string, uint32, error) {
	return h.s.display, h.s.startType, nil
}

func (h *fakeHandle) Dependencies() ([]string, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("dependencies %s", h.s.name)
	return append([]string(nil), h.s.dependsOn...), nil
}

func (h *fakeHandle) State() (uint32, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if len(h.s.script) > 0 {
		h.s.state = h.s.script[0]
		if len(h.s.script) > 1 {
			h.s.script = h.s.script[1:]
		}
	}
	return h.s.state, nil
}

func (h *fakeHandle) Start() error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("start %s", h.s.name)
	if h.s.state != stateStopped {
		return fmt.Errorf("StartService: %w", win32.ErrServiceAlreadyRunning)
	}
	h.s.script = append([]uint32(nil), h.s.afterStart...)
	if len(h.s.script) == 0 {
		h.s.script = []uint32{stateRunning}
	}
	h.s.state = stateStartPending
	return nil
}

func (h *fakeHandle) Stop() error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("stop %s", h.s.name)
	if len(h.s.stopErrs) > 0 {
		err := h.s.stopErrs[0]
		h.s.stopErrs = h.s.stopErrs[1:]
		return fmt.Errorf("ControlService SERVICE_CONTROL_STOP: %w", err)
	}
	if h.s.state == stateStopped {
		return fmt.Errorf("ControlService SERVICE_CONTROL_STOP: %w", win32.ErrServiceNotActive)
	}
	h.s.script = append([]uint32(nil), h.s.afterStop...)
	if len(h.s.script) == 0 {
		h.s.script = []uint32{stateStopped}
	}
	h.s.state = stateStopPending
	return nil
}

func (h *fakeHandle) ActiveDependents() ([]string, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("dependents %s", h.s.name)
	var out []string
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		var direct []string
		for _, s := range h.f.services {
			for _, d := range s.dependsOn {
				if strings.EqualFold(d, name) && s.state != stateStopped && !seen[s.name] {
					direct = append(direct, s.name)
				}
			}
		}
		sort.Strings(direct)
		for _, d := range direct {
			seen[d] = true
			if h.f.transitive {
				walk(d)
			}
			out = append(out, d)
		}
	}
	walk(h.s.name)
	return out, nil
}

func (h *fakeHandle) Close() error { return nil }
