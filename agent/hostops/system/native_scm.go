package system

import "fmt"

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
