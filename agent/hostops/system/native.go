package system

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/option"
)

// DefaultPoll is how often Native looks at a service it started or stopped,
// as .NET's ServiceController.WaitForStatus does (every 250 ms).
const DefaultPoll = 250 * time.Millisecond

// The operation names of Native's calls, for the limits and the errors.
const (
	opBIOSSerialNumber = "BIOSSerialNumber"
	opStartService     = "StartService"
	opStopService      = "StopService"
	opGetService       = "GetService"
)

// Native is API over Windows' own interfaces, with no process started: the
// service control manager (win32.Services) for the services and
// GetSystemFirmwareTable (win32.Firmware) for the SMBIOS tables that hold
// the BIOS serial number. It behaves as Start-Service and Stop-Service do: a
// start or stop waits until the service is Running or Stopped, and a stop
// without force is refused while services that depend on the service run.
// On other OSes every call answers that it needs Windows.
type Native struct {
	// Limits gives each call its deadline and its slot (limits.Bound for
	// the "system" group); nil means none.
	Limits limits.Limiter
	// Poll is how often a starting or stopping service is looked at; 0
	// means DefaultPoll.
	Poll time.Duration
	// MayStop says whether a running service that depends on the one
	// StopService stops with force may be stopped too; nil means any. The
	// agent allows only its --allowed-service list, so that force cannot
	// reach past it.
	MayStop func(name string) bool
	// MayStart says whether a service that is not running and that the
	// one StartService starts depends on, directly or not, may be started
	// with it (the service control manager starts those first); nil means
	// any. The agent allows only its --allowed-service list.
	MayStart func(name string) bool
	// Namer names the option that allows a service (OptionAllowedServices)
	// in the refusals of MayStop and MayStart as the command does: a
	// refusal then names <option>=<name> for each service refused. nil, or
	// a Namer that does not name it, names the services alone.
	Namer option.Namer
	// Firmware reads the raw SMBIOS data; nil means the host's
	// (win32.NewFirmware).
	Firmware win32.Firmware

	// connect opens the service control manager; nil means the host's.
	// Tests replace it.
	connect func() (win32.Services, error)
}

var _ API = Native{}

// BIOSSerialNumber returns the Serial Number of the SMBIOS System
// Information structure, which Win32_BIOS reports as SerialNumber (see
// SystemSerialNumber), with the spaces around it trimmed.
func (n Native) BIOSSerialNumber(ctx context.Context) (string, error) {
	var serial string
	err := limits.Call(ctx, n.Limits, opBIOSSerialNumber, func(context.Context) error {
		fw := n.Firmware
		if fw == nil {
			fw = win32.NewFirmware()
		}
		raw, err := fw.RawSMBIOSData()
		if err != nil {
			return fmt.Errorf("reading the BIOS serial number: %w", err)
		}
		s, err := SystemSerialNumber(raw)
		if err != nil {
			return fmt.Errorf("reading the BIOS serial number from the SMBIOS tables GetSystemFirmwareTable returned: %w", err)
		}
		serial = s
		return nil
	})
	if err != nil {
		// serial is not read: past its deadline, the call may still be
		// running on its own goroutine.
		return "", err
	}
	return serial, nil
}

// GetService returns the display name, start type and state of the service
// name (its service name, not its display name).
func (n Native) GetService(ctx context.Context, name string) (Service, error) {
	var svc Service
	err := n.withService(ctx, opGetService, name, win32.ServiceAccessQuery, nil, func(ctx context.Context, m win32.Services, h win32.Service) error {
		display, start, err := h.Config()
		if err != nil {
			return fmt.Errorf("GetService: reading the configuration of service %q: %w", name, err)
		}
		st, err := h.State()
		if err != nil {
			return fmt.Errorf("GetService: reading the status of service %q: %w", name, err)
		}
		svc = Service{DisplayName: display, StartType: start, Status: st}
		return nil
	})
	if err != nil {
		return Service{}, err // as BIOSSerialNumber: svc is not read
	}
	return svc, nil
}

// StartService starts the service name and waits until it is Running, as
// Start-Service does; a service already running is left as it is. With
// MayStart, a start that would start a service it depends on that MayStart
// refuses is refused before anything starts.
func (n Native) StartService(ctx context.Context, name string) error {
	w := &watch{}
	return n.withService(ctx, opStartService, name, win32.ServiceAccessStart, w, func(ctx context.Context, m win32.Services, h win32.Service) error {
		if n.MayStart != nil {
			if err := checkStartDependencies(m, name, h, n.MayStart, n.Namer); err != nil {
				return err
			}
		}
		return n.waiter(w).start(ctx, name, h)
	})
}

// StopService stops the service name and waits until it is Stopped, as
// Stop-Service does; a service already stopped is left as it is. While
// services that depend on it run, it is refused, unless force is set: then
// those services are stopped first, in the order the service control
// manager gives.
func (n Native) StopService(ctx context.Context, name string, force bool) error {
	w := &watch{}
	return n.withService(ctx, opStopService, name, win32.ServiceAccessStop, w, func(ctx context.Context, m win32.Services, h win32.Service) error {
		return n.waiter(w).stopTree(ctx, m, name, h, force, n.MayStop)
	})
}

func (n Native) waiter(w *watch) *waiter {
	poll := n.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	return &waiter{poll: poll, watch: w, namer: n.Namer}
}

// withService runs fn, named op, under the limits, with the service name
// open for a. When the deadline passes first, the error says what the
// service was doing, from w.
func (n Native) withService(ctx context.Context, op, name string, a win32.ServiceAccess, w *watch, fn func(context.Context, win32.Services, win32.Service) error) error {
	err := limits.Call(ctx, n.Limits, op, func(ctx context.Context) error {
		connect := n.connect
		if connect == nil {
			connect = win32.ConnectServices
		}
		m, err := connect()
		if err != nil {
			return fmt.Errorf("%s: connecting to the service control manager: %w", op, err)
		}
		defer m.Close()
		h, err := m.Open(name, a)
		if err != nil {
			return openError(op, name, err)
		}
		defer h.Close()
		return fn(ctx, m, h)
	})
	var deadline *limits.DeadlineError
	if errors.As(err, &deadline) && w != nil {
		if last := w.String(); last != "" {
			return fmt.Errorf("%w: %s", err, last)
		}
	}
	return err
}

// openError is the error of opening the service name.
func openError(op, name string, err error) error {
	if errors.Is(err, win32.ErrNoSuchService) {
		return fmt.Errorf("%s: there is no service named %q on this node: give the service's name as sc.exe query lists it (SERVICE_NAME), not its display name: %w", op, name, err)
	}
	return fmt.Errorf("%s: opening service %q: %w", op, name, err)
}

// watch records the last state seen of the service being waited for. The
// call that waits may still run when its deadline has passed, on its own
// goroutine, hence the lock.
type watch struct {
	mu    sync.Mutex
	name  string
	state uint32
	want  string
}

func (w *watch) saw(name string, state uint32, want string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.name, w.state, w.want = name, state, want
}

// String says what was last seen, or "" when nothing was.
func (w *watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.name == "" {
		return ""
	}
	return fmt.Sprintf("service %q was still %s, not %s; look at the service's own logs or the System event log for why", w.name, stateName(w.state), w.want)
}
