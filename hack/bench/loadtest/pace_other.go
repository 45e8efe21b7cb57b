//go:build !linux

package main

import "time"

// pacer waits for the due times of an open-loop run with the Go runtime's
// timers, which may wake up to a millisecond late; see pace_linux.go.
type pacer struct{}

func newPacer() pacer { return pacer{} }

func (pacer) until(t time.Time) {
	if wait := time.Until(t); wait > 0 {
		time.Sleep(wait)
	}
}

func (pacer) stop() {}
