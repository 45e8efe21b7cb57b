//go:build windows

package app

import (
	"context"
	"fmt"
	"io"

	"golang.org/x/sys/windows/svc"
)

// runAsService runs body under the Windows service control manager: the
// context ends when the service is asked to stop or the machine shuts down.
func runAsService(name string, body func(ctx context.Context) int, stderr io.Writer) int {
	h := &handler{body: body}
	if err := svc.Run(name, h); err != nil {
		fmt.Fprintf(stderr, "running as Windows service %q: %v\n", name, err)
		return 1
	}
	return h.code
}

type handler struct {
	body func(ctx context.Context) int
	code int
}

func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- h.body(ctx) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case h.code = <-done:
			status <- svc.Status{State: svc.StopPending}
			return false, uint32(h.code)
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
			}
		}
	}
}
