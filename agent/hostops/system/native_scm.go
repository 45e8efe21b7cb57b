package system

import (
	"errors"
	"fmt"
)

// The service states, as QueryServiceStatus reports them in
// SERVICE_STATUS.dwCurrentState (SERVICE_STOPPED through SERVICE_PAUSED in
// winsvc.h). .NET's ServiceControllerStatus, which Get-Service reports and
// Service.Status documents, has the same names and values (Stopped = 1
// through Paused = 7), and so does the CSI Proxy ServiceStatus enum; the
// Windows tests check these constants against golang.org/x/sys/windows.
const (
	stateStopped         uint32 = 1
	stateStartPending    uint32 = 2
	stateStopPending     uint32 = 3
	stateRunning         uint32 = 4
	stateContinuePending uint32 = 5
	statePausePending    uint32 = 6
	statePaused          uint32 = 7
)

// The start types, as QueryServiceConfig reports them in
// QUERY_SERVICE_CONFIG.dwStartType (SERVICE_BOOT_START through
// SERVICE_DISABLED). .NET's ServiceStartMode, which Get-Service reports as
// StartType and Service.StartType documents, has the same values (Boot = 0,
// System = 1, Automatic = 2, Manual = 3, Disabled = 4), and so does the CSI
// Proxy StartType enum. A delayed automatic start is SERVICE_AUTO_START
// with a separate flag (SERVICE_CONFIG_DELAYED_AUTO_START_INFO) that .NET
// does not look at: both report Automatic, and so does Native.
const (
	startBoot      uint32 = 0
	startSystem    uint32 = 1
	startAutomatic uint32 = 2
	startManual    uint32 = 3
	startDisabled  uint32 = 4
)

// stateName names a service state as Get-Service prints it.
func stateName(s uint32) string {
	switch s {
	case stateStopped:
		return "Stopped"
	case stateStartPending:
		return "StartPending"
	case stateStopPending:
		return "StopPending"
	case stateRunning:
		return "Running"
	case stateContinuePending:
		return "ContinuePending"
	case statePausePending:
		return "PausePending"
	case statePaused:
		return "Paused"
	}
	return fmt.Sprintf("state %d", s)
}

// access is what a service is opened for; the Windows side turns each into
// the least access rights that allow it.
type access int

const (
	// accessQuery reads the configuration and the status
	// (SERVICE_QUERY_CONFIG | SERVICE_QUERY_STATUS).
	accessQuery access = iota
	// accessStart reads what the service depends on, starts it and
	// follows its status (SERVICE_START | SERVICE_QUERY_STATUS |
	// SERVICE_QUERY_CONFIG).
	accessStart
	// accessStop lists the services that depend on it, stops it and
	// follows its status (SERVICE_STOP | SERVICE_QUERY_STATUS |
	// SERVICE_ENUMERATE_DEPENDENTS).
	accessStop
)

// serviceManager is the service control manager, opened with
// SC_MANAGER_CONNECT: it opens services by name.
type serviceManager interface {
	// open opens the service name for a. A service that is not installed
	// gives an error wrapping errNoSuchService.
	open(name string, a access) (serviceHandle, error)
	close() error
}

// serviceHandle is an open service.
type serviceHandle interface {
	// config returns the display name and start type.
	config() (displayName string, startType uint32, err error)
	// dependencies returns the services this one depends on, which the
	// service control manager starts before it; a load-order group it
	// depends on is named with SC_GROUP_IDENTIFIER ('+') in front.
	dependencies() ([]string, error)
	// state returns the current state.
	state() (uint32, error)
	// start asks the service control manager to start the service; a
	// service that is already running gives an error wrapping
	// errAlreadyRunning.
	start() error
	// stop sends the stop control. A service that is not running gives an
	// error wrapping errNotActive; one that cannot take controls now (it
	// is starting or stopping) errCannotAcceptControl; one whose running
	// dependents keep it from stopping errDependentsRunning; one that does
	// not take the stop control at all errStopNotAccepted.
	stop() error
	// activeDependents returns the services that depend on this one and
	// are not stopped, in the order in which to stop them.
	activeDependents() ([]string, error)
	close() error
}

// What the service control manager answers, independent of the OS. The
// Windows side wraps the Win32 error with these (ERROR_SERVICE_DOES_NOT_EXIST,
// ERROR_SERVICE_ALREADY_RUNNING, ERROR_SERVICE_NOT_ACTIVE,
// ERROR_SERVICE_CANNOT_ACCEPT_CTRL, ERROR_DEPENDENT_SERVICES_RUNNING,
// ERROR_INVALID_SERVICE_CONTROL).
var (
	errNoSuchService       = errors.New("no such service")
	errAlreadyRunning      = errors.New("the service is already running")
	errNotActive           = errors.New("the service is not running")
	errCannotAcceptControl = errors.New("the service cannot accept controls now")
	errDependentsRunning   = errors.New("services that depend on it are running")
	errStopNotAccepted     = errors.New("the service does not accept the stop control")
)
