//go:build !windows

package win32

import (
	"fmt"
	"runtime"
)

// ConnectServices needs Windows.
func ConnectServices() (Services, error) {
	return nil, fmt.Errorf("cannot call the service control manager on %s: this host operation needs Windows", runtime.GOOS)
}
