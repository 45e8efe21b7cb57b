//go:build !windows

package wmi

import (
	"errors"
	"runtime"
)

// New fails: WMI is a Windows service.
func New() (Conn, error) {
	return nil, errors.New("WMI needs Windows; this agent runs on " + runtime.GOOS)
}
