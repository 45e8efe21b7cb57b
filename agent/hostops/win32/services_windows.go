package win32

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// ConnectServices opens the local service control manager with
// SC_MANAGER_CONNECT only, the right that OpenService needs; mgr.Connect
// would ask for SC_MANAGER_ALL_ACCESS.
func ConnectServices() (Services, error) {
	h, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return nil, fmt.Errorf("OpenSCManager with SC_MANAGER_CONNECT: %w", err)
	}
	return &winManager{m: &mgr.Mgr{Handle: h}}, nil
}

// accessRights are the access rights each access opens a service with:
// the least that its calls need (mgr.Mgr.OpenService would ask for
// SERVICE_ALL_ACCESS).
func accessRights(a ServiceAccess) uint32 {
	switch a {
	case ServiceAccessQuery:
		return windows.SERVICE_QUERY_CONFIG | windows.SERVICE_QUERY_STATUS
	case ServiceAccessStart:
		return windows.SERVICE_START | windows.SERVICE_QUERY_STATUS | windows.SERVICE_QUERY_CONFIG
	case ServiceAccessStop:
		return windows.SERVICE_STOP | windows.SERVICE_QUERY_STATUS | windows.SERVICE_ENUMERATE_DEPENDENTS
	}
	return 0
}

type winManager struct{ m *mgr.Mgr }

func (w *winManager) Open(name string, a ServiceAccess) (Service, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, fmt.Errorf("service name %q: %w", name, err)
	}
	h, err := windows.OpenService(w.m.Handle, p, accessRights(a))
	if err != nil {
		return nil, fmt.Errorf("OpenService: %w", scmError(err))
	}
	return &winService{s: &mgr.Service{Name: name, Handle: h}}, nil
}

func (w *winManager) Close() error { return w.m.Disconnect() }

type winService struct{ s *mgr.Service }

// maxServiceConfig bounds the QUERY_SERVICE_CONFIG buffer; Microsoft
// documents 8 KiB as its largest size.
const maxServiceConfig = 8 << 10

func (w *winService) Config() (string, uint32, error) {
	var display string
	var start uint32
	err := w.queryConfig(func(c *windows.QUERY_SERVICE_CONFIG, _ []uint64) {
		display, start = windows.UTF16PtrToString(c.DisplayName), c.StartType
	})
	return display, start, err
}

func (w *winService) Dependencies() ([]string, error) {
	var deps []string
	var bad error
	err := w.queryConfig(func(c *windows.QUERY_SERVICE_CONFIG, buf []uint64) { deps, bad = multiString(c.Dependencies, buf) })
	if err == nil && bad != nil {
		err = fmt.Errorf("QueryServiceConfig: lpDependencies: %w", bad)
	}
	return deps, err
}

// queryConfig calls read with the service's QUERY_SERVICE_CONFIG, which
// holds pointers into its buffer: read must copy what it keeps.
func (w *winService) queryConfig(read func(c *windows.QUERY_SERVICE_CONFIG, buf []uint64)) error {
	n := uint32(1024)
	for range 3 {
		// A []uint64 keeps the buffer aligned for the structure's pointers.
		buf := make([]uint64, (n+7)/8)
		c := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
		var needed uint32
		err := windows.QueryServiceConfig(w.s.Handle, c, uint32(len(buf)*8), &needed)
		if err == nil {
			read(c, buf)
			return nil
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			return fmt.Errorf("QueryServiceConfig: %w", err)
		}
		if needed <= n || needed > maxServiceConfig {
			return fmt.Errorf("QueryServiceConfig: asks for %d bytes after %d: %w", needed, n, err)
		}
		n = needed
	}
	return errors.New("QueryServiceConfig: the configuration kept growing")
}

// multiString reads a REG_MULTI_SZ-shaped list (lpDependencies) at p,
// inside buf: strings each ended by a NUL, the list by an empty one. It
// never reads past buf; a list that is not inside buf, or not ended in it,
// is an error, so that dependencies that cannot be read are never taken
// for none.
func multiString(p *uint16, buf []uint64) ([]string, error) {
	if p == nil {
		return nil, nil
	}
	start := uintptr(unsafe.Pointer(&buf[0]))
	end := start + uintptr(len(buf)*8)
	at := uintptr(unsafe.Pointer(p))
	if at < start || at >= end {
		return nil, errors.New("the list is not inside the buffer QueryServiceConfig filled")
	}
	chars := unsafe.Slice(p, (end-at)/2)
	var out []string
	for from, i := 0, 0; i < len(chars); i++ {
		if chars[i] != 0 {
			continue
		}
		if i == from {
			return out, nil
		}
		out = append(out, windows.UTF16ToString(chars[from:i]))
		from = i + 1
	}
	return nil, errors.New("the list does not end inside the buffer QueryServiceConfig filled")
}

func (w *winService) State() (uint32, error) {
	var st windows.SERVICE_STATUS
	if err := windows.QueryServiceStatus(w.s.Handle, &st); err != nil {
		return 0, fmt.Errorf("QueryServiceStatus: %w", err)
	}
	return st.CurrentState, nil
}

func (w *winService) Start() error {
	if err := w.s.Start(); err != nil {
		return fmt.Errorf("StartService: %w", scmError(err))
	}
	return nil
}

func (w *winService) Stop() error {
	if _, err := w.s.Control(svc.Stop); err != nil {
		return fmt.Errorf("ControlService SERVICE_CONTROL_STOP: %w", scmError(err))
	}
	return nil
}

func (w *winService) ActiveDependents() ([]string, error) {
	deps, err := w.s.ListDependentServices(svc.Active)
	if err != nil {
		return nil, fmt.Errorf("EnumDependentServices SERVICE_ACTIVE: %w", err)
	}
	return deps, nil
}

func (w *winService) Close() error { return w.s.Close() }

// scmError wraps the Win32 errors the waiting logic acts on with their
// portable meaning, keeping the Win32 error in the chain.
func scmError(err error) error {
	for _, m := range []struct {
		win  windows.Errno
		kind error
	}{
		{windows.ERROR_SERVICE_DOES_NOT_EXIST, ErrNoSuchService},
		{windows.ERROR_SERVICE_ALREADY_RUNNING, ErrServiceAlreadyRunning},
		{windows.ERROR_SERVICE_NOT_ACTIVE, ErrServiceNotActive},
		{windows.ERROR_SERVICE_CANNOT_ACCEPT_CTRL, ErrServiceCannotAcceptControl},
		{windows.ERROR_DEPENDENT_SERVICES_RUNNING, ErrDependentServicesRunning},
		{windows.ERROR_INVALID_SERVICE_CONTROL, ErrStopNotAccepted},
	} {
		if errors.Is(err, m.win) {
			return fmt.Errorf("%w (%w)", m.kind, err)
		}
	}
	return err
}
