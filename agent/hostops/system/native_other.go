//go:build !windows

package system

import (
	"fmt"
	"runtime"
)

// connectServiceManager needs Windows.
func connectServiceManager() (serviceManager, error) {
	return nil, needsWindows("the service control manager")
}

// needsWindows is the error of a Windows interface called on another OS,
// in the words of runner.Unsupported. The agent answers the system group's
// calls before they get here on other OSes; this is a second stop.
func needsWindows(what string) error {
	return fmt.Errorf("cannot call %s on %s: this host operation needs Windows", what, runtime.GOOS)
}
