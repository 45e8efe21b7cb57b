package win32

import "errors"

// ServiceAccess is what a service is opened for; the Windows side turns
// each into the least access rights that allow it.
type ServiceAccess int

const (
	// ServiceAccessQuery reads the configuration and the status
	// (SERVICE_QUERY_CONFIG | SERVICE_QUERY_STATUS).
	ServiceAccessQuery ServiceAccess = iota
	// ServiceAccessStart reads what the service depends on, starts it and
	// follows its status (SERVICE_START | SERVICE_QUERY_STATUS |
	// SERVICE_QUERY_CONFIG).
	ServiceAccessStart
	// ServiceAccessStop lists the services that depend on it, stops it and
	// follows its status (SERVICE_STOP | SERVICE_QUERY_STATUS |
	// SERVICE_ENUMERATE_DEPENDENTS).
	ServiceAccessStop
)

// Services is the service control manager, opened with SC_MANAGER_CONNECT
// (ConnectServices): it opens services by name.
type Services interface {
	// Open opens the service name for a. A service that is not installed
	// gives an error wrapping ErrNoSuchService.
	Open(name string, a ServiceAccess) (Service, error)
	Close() error
}

// Service is an open service.
type Service interface {
	// Config returns the display name and start type.
	Config() (displayName string, startType uint32, err error)
	// Dependencies returns the services this one depends on, which the
	// service control manager starts before it; a load-order group it
	// depends on is named with SC_GROUP_IDENTIFIER ('+') in front.
	Dependencies() ([]string, error)
	// State returns the current state (SERVICE_STATUS.dwCurrentState).
	State() (uint32, error)
	// Start asks the service control manager to start the service; a
	// service that is already running gives an error wrapping
	// ErrServiceAlreadyRunning.
	Start() error
	// Stop sends the stop control. A service that is not running gives an
	// error wrapping ErrServiceNotActive; one that cannot take controls now
	// (it is starting or stopping) ErrServiceCannotAcceptControl; one whose
	// running dependents keep it from stopping ErrDependentServicesRunning;
	// one that does not take the stop control at all ErrStopNotAccepted.
	Stop() error
	// ActiveDependents returns the services that depend on this one and
	// are not stopped, in the order in which to stop them.
	ActiveDependents() ([]string, error)
	Close() error
}

// What the service control manager answers, independent of the OS. The
// Windows side wraps the Win32 error with these (ERROR_SERVICE_DOES_NOT_EXIST,
// ERROR_SERVICE_ALREADY_RUNNING, ERROR_SERVICE_NOT_ACTIVE,
// ERROR_SERVICE_CANNOT_ACCEPT_CTRL, ERROR_DEPENDENT_SERVICES_RUNNING,
// ERROR_INVALID_SERVICE_CONTROL).
var (
	ErrNoSuchService              = errors.New("no such service")
	ErrServiceAlreadyRunning      = errors.New("the service is already running")
	ErrServiceNotActive           = errors.New("the service is not running")
	ErrServiceCannotAcceptControl = errors.New("the service cannot accept controls now")
	ErrDependentServicesRunning   = errors.New("services that depend on it are running")
	ErrStopNotAccepted            = errors.New("the service does not accept the stop control")
)
