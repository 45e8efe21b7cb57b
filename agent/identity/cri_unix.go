//go:build !windows && !linux

package identity

import (
	"errors"
	"time"
)

func hostProcesses() ProcessTable { return noProcesses{} }

type noProcesses struct{}

func (noProcesses) Process(int) (int, time.Time, error) {
	return 0, time.Time{}, errors.New("process parents are read on Linux and Windows only")
}
