package system

// The allowed services (--allowed-service) bound what a start or a stop
// with force reaches: the services the service control manager would
// start with the one started, and the dependents stopped with the one
// stopped.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/option"
)

// groupPrefix marks a load-order group among a service's dependencies
// (SC_GROUP_IDENTIFIER).
const groupPrefix = "+"

// checkStartDependencies refuses to start name when the service control
// manager would start with it a service that is not running and that
// mayStart refuses, directly or through another dependency, or when it
// depends on a load-order group, whose members cannot be known ahead.
// Nothing is started before it returns.
func checkStartDependencies(m win32.Services, name string, h win32.Service, mayStart func(string) bool, namer option.Namer) error {
	var refused []string
	var walk func(path []string, h win32.Service) error
	walk = func(path []string, h win32.Service) error {
		svc := path[len(path)-1]
		deps, err := h.Dependencies()
		if err != nil {
			return fmt.Errorf("StartService: reading the services service %q depends on: %w", svc, err)
		}
		for _, dep := range deps {
			if g, ok := strings.CutPrefix(dep, groupPrefix); ok {
				return &NotAllowedError{Rule: RuleAllowedServices, Msg: fmt.Sprintf(
					"StartService of service %q refused: service %q depends on the load-order group %q, whose services a start may start too and the agent cannot check against the allowed services; start it on the node",
					name, svc, g)}
			}
			if slices.ContainsFunc(path, func(p string) bool { return strings.EqualFold(p, dep) }) {
				return fmt.Errorf("StartService: services depend on each other in a cycle (%s -> %s): the service control manager's database is inconsistent; start them on the node", quoteAll(path), strconv.Quote(dep))
			}
			if len(path) >= maxDependentDepth {
				return fmt.Errorf("StartService: services depend on each other more than %d deep (%s -> %s): start them on the node", maxDependentDepth, quoteAll(path), strconv.Quote(dep))
			}
			dh, err := m.Open(dep, win32.ServiceAccessQuery)
			if errors.Is(err, win32.ErrNoSuchService) {
				continue // the service control manager refuses the start itself
			}
			if err != nil {
				return fmt.Errorf("StartService: opening service %q, which service %q depends on: %w", dep, svc, err)
			}
			err = func() error {
				defer dh.Close()
				st, err := dh.State()
				if err != nil {
					return fmt.Errorf("StartService: reading the status of service %q, which service %q depends on: %w", dep, svc, err)
				}
				if st == stateRunning {
					return nil // not started again, nor what it depends on
				}
				if !mayStart(dep) && !slices.ContainsFunc(refused, func(r string) bool { return strings.EqualFold(r, dep) }) {
					refused = append(refused, dep)
				}
				return walk(append(path[:len(path):len(path)], dep), dh)
			}()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk([]string{name}, h); err != nil {
		return err
	}
	if len(refused) > 0 {
		return &NotAllowedError{Rule: RuleAllowedServices, Msg: fmt.Sprintf(
			"StartService of service %q refused: it would also start services it depends on that are not running and are not allowed services: %s; start them on the node first, or allow them too (%s)",
			name, quoteAll(refused), allowFlags(namer, refused))}
	}
	return nil
}

// refuseDependentStop refuses to stop dep, a dependent of the service a
// stop with force was asked for, when mayStop does not allow it: one that
// started after the dependents were checked.
func refuseDependentStop(name, dep string, mayStop func(string) bool, namer option.Namer) error {
	if mayStop == nil || mayStop(dep) {
		return nil
	}
	return &NotAllowedError{Rule: RuleAllowedServices, Msg: fmt.Sprintf(
		"StopService of service %q with force refused: service %q, which depends on it, started while it was being stopped and is not an allowed service; the services stopped so far stay stopped; stop it on the node first, or allow it too (%s)",
		name, dep, allowFlags(namer, []string{dep}))}
}

// OptionAllowedServices is the key of the option that allows services
// (see package option): the agent's allowed services, which MayStop and
// MayStart check.
const OptionAllowedServices = "system.allowed-services"

// allowFlags are the settings that would allow names: option=name for each,
// with the option that allows services as n names it, or the names alone
// when n does not name it.
func allowFlags(n option.Namer, names []string) string {
	setting, ok := "", false
	if n != nil {
		setting, ok = n(OptionAllowedServices)
	}
	flags := make([]string, len(names))
	for i, r := range names {
		flags[i] = r
		if ok {
			flags[i] = setting + "=" + r
		}
	}
	return strings.Join(flags, " ")
}
