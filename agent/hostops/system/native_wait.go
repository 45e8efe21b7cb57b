package system

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/option"
)

// RuleAllowedServices names the rule that refuses services the agent was
// not told to allow (--allowed-service).
const RuleAllowedServices = "allowed-services"

// maxDependentDepth bounds how deep StopService with force follows services
// that depend on services that depend on the one to stop. The service
// control manager refuses dependency cycles; the bound keeps a broken
// database from holding a call until its deadline.
const maxDependentDepth = 16

// waiter starts and stops services and waits for them to get there,
// polling their state. It reads nothing but what win32.Service gives, so
// that the tests can drive it with a fake service control manager.
type waiter struct {
	poll  time.Duration
	watch *watch
	// stopping and mayStop are the service a stop with force was asked
	// for and what may be stopped with it (nil: any).
	stopping string
	mayStop  func(string) bool
	// namer is Native.Namer, for the refusals.
	namer option.Namer
}

// sleep waits one poll interval, or until ctx ends.
func (w *waiter) sleep(ctx context.Context) error {
	t := time.NewTimer(w.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// start starts the service and waits until it is Running. A stopping
// service is let stop first; a paused one is refused, as resuming it is
// another operation.
func (w *waiter) start(ctx context.Context, name string, h win32.Service) error {
	started := false
	for {
		st, err := h.State()
		if err != nil {
			return fmt.Errorf("StartService: reading the status of service %q: %w", name, err)
		}
		w.watch.saw(name, st, "Running")
		switch st {
		case stateRunning:
			return nil
		case stateStopped:
			if started {
				return fmt.Errorf("StartService: service %q stopped again while it was starting: look at the service's own logs or the System event log for why", name)
			}
			if err := h.Start(); err != nil && !errors.Is(err, win32.ErrServiceAlreadyRunning) {
				return fmt.Errorf("StartService: starting service %q: %w", name, err)
			}
			started = true
			continue
		case statePaused, statePausePending:
			return fmt.Errorf("StartService: service %q is %s: StartService does not resume a paused service; resume it on the node with sc.exe continue %s", name, stateName(st), name)
		}
		// StartPending, ContinuePending and StopPending: wait.
		if err := w.sleep(ctx); err != nil {
			return err
		}
	}
}

// stopTree stops the service and waits until it is Stopped. Services that
// depend on it and are not stopped make it a refusal, unless force is set:
// then they are stopped first, each with the services that depend on it, in
// the order the service control manager gives (the reverse of their start
// order).
//
// With force and mayStop set, every running service under it, however deep,
// must be one mayStop allows, or nothing is stopped: the call is refused
// with rule allowed-services, naming those that are not.
func (w *waiter) stopTree(ctx context.Context, m win32.Services, name string, h win32.Service, force bool, mayStop func(string) bool) error {
	if force && mayStop != nil {
		var refused []string
		if err := w.collectDependents(m, h, []string{name}, func(dep string) {
			if !mayStop(dep) && !slices.ContainsFunc(refused, func(r string) bool { return strings.EqualFold(r, dep) }) {
				refused = append(refused, dep)
			}
		}); err != nil {
			return err
		}
		if len(refused) > 0 {
			return &NotAllowedError{Rule: RuleAllowedServices, Msg: fmt.Sprintf(
				"StopService of service %q with force refused: it would also stop services that depend on it and are not allowed services: %s; stop them on the node first, or allow them too (%s)",
				name, quoteAll(refused), allowFlags(w.namer, refused))}
		}
	}
	// The dependents are read again for the stop: each is checked again
	// there, as one may have started since.
	w.stopping, w.mayStop = name, mayStop
	return w.stopWithDependents(ctx, m, name, h, force, []string{name})
}

// collectDependents calls found for every running service that depends on
// the last of path, directly or not, reading only.
func (w *waiter) collectDependents(m win32.Services, h win32.Service, path []string, found func(string)) error {
	name := path[len(path)-1]
	deps, err := h.ActiveDependents()
	if err != nil {
		return fmt.Errorf("StopService: listing the services that depend on service %q: %w", name, err)
	}
	for _, dep := range deps {
		if err := checkDependency(path, dep); err != nil {
			return err
		}
		found(dep)
		dh, err := m.Open(dep, win32.ServiceAccessStop)
		if errors.Is(err, win32.ErrNoSuchService) {
			continue // deleted since it was listed
		}
		if err != nil {
			return fmt.Errorf("StopService: opening service %q, which depends on service %q: %w", dep, name, err)
		}
		err = w.collectDependents(m, dh, append(path[:len(path):len(path)], dep), found)
		dh.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *waiter) stopWithDependents(ctx context.Context, m win32.Services, name string, h win32.Service, force bool, path []string) error {
	st, err := h.State()
	if err != nil {
		return fmt.Errorf("StopService: reading the status of service %q: %w", name, err)
	}
	w.watch.saw(name, st, "Stopped")
	if st == stateStopped {
		return nil
	}
	deps, err := h.ActiveDependents()
	if err != nil {
		return fmt.Errorf("StopService: listing the services that depend on service %q: %w", name, err)
	}
	if len(deps) > 0 && !force {
		return fmt.Errorf("StopService of service %q refused: services that depend on it are running: %s; stop them first, or call StopService with force to stop them too", name, quoteAll(deps))
	}
	for _, dep := range deps {
		if err := w.stopDependent(ctx, m, dep, path); err != nil {
			return err
		}
	}
	return w.stopOne(ctx, name, h)
}

// checkDependency refuses to follow dep, a service that depends on the last
// of path, when it closes a cycle or goes deeper than maxDependentDepth.
func checkDependency(path []string, dep string) error {
	if slices.ContainsFunc(path, func(p string) bool { return strings.EqualFold(p, dep) }) {
		return fmt.Errorf("StopService: services depend on each other in a cycle (%s -> %s): the service control manager's database is inconsistent; stop them on the node", quoteAll(path), strconv.Quote(dep))
	}
	if len(path) >= maxDependentDepth {
		return fmt.Errorf("StopService: services depend on each other more than %d deep (%s -> %s): stop them on the node", maxDependentDepth, quoteAll(path), strconv.Quote(dep))
	}
	return nil
}

// stopDependent stops dep, a service that depends on the last of path, with
// the services that depend on it.
func (w *waiter) stopDependent(ctx context.Context, m win32.Services, dep string, path []string) error {
	if err := checkDependency(path, dep); err != nil {
		return err
	}
	if err := refuseDependentStop(w.stopping, dep, w.mayStop, w.namer); err != nil {
		return err
	}
	h, err := m.Open(dep, win32.ServiceAccessStop)
	if err != nil {
		if errors.Is(err, win32.ErrNoSuchService) {
			return nil // deleted since it was listed
		}
		return fmt.Errorf("StopService: opening service %q, which depends on service %q: %w", dep, path[len(path)-1], err)
	}
	defer h.Close()
	return w.stopWithDependents(ctx, m, dep, h, true, append(path[:len(path):len(path)], dep))
}

// stopOne sends the stop control to the service and waits until it is
// Stopped. A service that is starting cannot take the control yet: it is
// sent again once it can.
func (w *waiter) stopOne(ctx context.Context, name string, h win32.Service) error {
	sent := false
	for {
		st, err := h.State()
		if err != nil {
			return fmt.Errorf("StopService: reading the status of service %q: %w", name, err)
		}
		w.watch.saw(name, st, "Stopped")
		if st == stateStopped {
			return nil
		}
		if !sent && st != stateStopPending {
			err := h.Stop()
			switch {
			case err == nil, errors.Is(err, win32.ErrServiceNotActive):
				sent = true
				continue
			case errors.Is(err, win32.ErrServiceCannotAcceptControl):
				// Starting, or between states: try again after a poll.
			case errors.Is(err, win32.ErrDependentServicesRunning):
				return fmt.Errorf("StopService: service %q did not stop: services that depend on it started while it was being stopped: %w", name, err)
			case errors.Is(err, win32.ErrStopNotAccepted):
				return fmt.Errorf("StopService: service %q does not accept stop requests: it cannot be stopped while it runs: %w", name, err)
			default:
				return fmt.Errorf("StopService: stopping service %q: %w", name, err)
			}
		}
		if err := w.sleep(ctx); err != nil {
			return err
		}
	}
}

// quoteAll quotes each name and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
