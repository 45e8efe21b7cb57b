package system

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
)

// serviceHostArg makes this test binary a Windows service instead of
// running the tests: the services TestNativeServices installs run it as
//
//	system.test.exe pipeguard-test-service <name> <start delay>
const serviceHostArg = "pipeguard-test-service"

func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == serviceHostArg {
		os.Exit(runTestService(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

// runTestService serves the service control manager as the service name:
// StartPending for the start delay, then Running until it is asked to
// stop, then StopPending for a moment, so that starts and stops are waited
// for.
func runTestService(name, startDelay string) int {
	delay, err := time.ParseDuration(startDelay)
	if err != nil {
		return 2
	}
	if err := svc.Run(name, testService{startDelay: delay}); err != nil {
		return 1
	}
	return 0
}

type testService struct{ startDelay time.Duration }

func (s testService) Execute(_ []string, requests <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending, WaitHint: uint32((s.startDelay + 10*time.Second) / time.Millisecond)}
	// A stand-in that starts slowly on purpose, so that starts are waited for.
	time.Sleep(s.startDelay)
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for r := range requests {
		switch r.Cmd {
		case svc.Interrogate:
			changes <- r.CurrentStatus
		case svc.Stop, svc.Shutdown:
			changes <- svc.Status{State: svc.StopPending, WaitHint: 10000}
			// A stand-in that stops slowly on purpose, so that stops are waited for.
			time.Sleep(300 * time.Millisecond)
			return false, 0
		}
	}
	return false, 0
}

// TestConstantsAreWindows checks the numbering Service documents, and the
// least access rights, against golang.org/x/sys/windows.
func TestConstantsAreWindows(t *testing.T) {
	pairs := []struct {
		name      string
		ours, win uint32
	}{
		{"SERVICE_STOPPED", stateStopped, windows.SERVICE_STOPPED},
		{"SERVICE_START_PENDING", stateStartPending, windows.SERVICE_START_PENDING},
		{"SERVICE_STOP_PENDING", stateStopPending, windows.SERVICE_STOP_PENDING},
		{"SERVICE_RUNNING", stateRunning, windows.SERVICE_RUNNING},
		{"SERVICE_CONTINUE_PENDING", stateContinuePending, windows.SERVICE_CONTINUE_PENDING},
		{"SERVICE_PAUSE_PENDING", statePausePending, windows.SERVICE_PAUSE_PENDING},
		{"SERVICE_PAUSED", statePaused, windows.SERVICE_PAUSED},
		{"SERVICE_BOOT_START", startBoot, windows.SERVICE_BOOT_START},
		{"SERVICE_SYSTEM_START", startSystem, windows.SERVICE_SYSTEM_START},
		{"SERVICE_AUTO_START", startAutomatic, windows.SERVICE_AUTO_START},
		{"SERVICE_DEMAND_START", startManual, windows.SERVICE_DEMAND_START},
		{"SERVICE_DISABLED", startDisabled, windows.SERVICE_DISABLED},
	}
	for _, p := range pairs {
		if p.ours != p.win {
			t.Errorf("%s: ours %#x, Windows %#x", p.name, p.ours, p.win)
		}
	}
}

// underWine skips the tests that install services unless they run under
// Wine, from test/wine's TestWindowsPackages: on a Windows machine they
// would change its service database.
func underWine(t *testing.T) {
	t.Helper()
	if os.Getenv("PIPEGUARD_UNDER_WINE") != "1" {
		t.Skip("installs services in the service control manager: runs under Wine only (test/wine TestWindowsPackages)")
	}
}

// installTestService installs a service that runs this binary, removed at
// the end of the test.
func installTestService(t *testing.T, m *mgr.Mgr, name string, startDelay time.Duration, dependsOn ...string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.CreateService(name, exe, mgr.Config{
		DisplayName:  "pipeguard test " + name,
		StartType:    mgr.StartManual,
		Dependencies: dependsOn,
	}, serviceHostArg, name, startDelay.String())
	if err != nil {
		t.Fatalf("installing service %s: %v", name, err)
	}
	t.Cleanup(func() {
		defer s.Close()
		if st, err := s.Query(); err == nil && st.State != svc.Stopped {
			_, _ = s.Control(svc.Stop)
			// Poll under a deadline for the stop; the pause only spares the CPU.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if st, err := s.Query(); err != nil || st.State == svc.Stopped {
					break
				}
			}
		}
		if err := s.Delete(); err != nil {
			t.Errorf("deleting service %s: %v", name, err)
		}
	})
}

// TestNativeServices drives Native against services of the real service
// control manager (Wine's, under test/wine): a service with another that
// depends on it, both run by this test binary.
func TestNativeServices(t *testing.T) {
	underWine(t)
	m, err := mgr.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Disconnect()
	base := fmt.Sprintf("pipeguard-test-%d-base", os.Getpid())
	dependent := fmt.Sprintf("pipeguard-test-%d-dependent", os.Getpid())
	installTestService(t, m, base, 500*time.Millisecond)
	installTestService(t, m, dependent, 0, base)

	ctx := context.Background()
	n := Native{Limits: limits.Bound("system", limits.Limits{Timeout: time.Minute, Concurrency: 8, Setting: "--host-call-timeout-system"})}
	get := func(name string) Service {
		t.Helper()
		s, err := n.GetService(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	if got, want := get(base), (Service{DisplayName: "pipeguard test " + base, StartType: startManual, Status: stateStopped}); got != want {
		t.Fatalf("GetService of the new service = %+v, want %+v", got, want)
	}
	if err := n.StartService(ctx, base); err != nil {
		t.Fatal(err)
	}
	// The service stays StartPending for half a second: StartService
	// returned once it was Running.
	if got := get(base).Status; got != stateRunning {
		t.Fatalf("after StartService the service is %s", stateName(got))
	}
	if err := n.StartService(ctx, base); err != nil {
		t.Fatalf("StartService of a running service: %v", err)
	}
	if err := n.StartService(ctx, dependent); err != nil {
		t.Fatal(err)
	}

	deps, err := listActiveDependents(m, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) == 0 {
		// Wine 8's EnumDependentServices lists nothing: the refusal and
		// the stop order are tested with the fake on Linux.
		t.Logf("the service control manager lists no dependents of %s: refusal not tested here", base)
	} else {
		err := n.StopService(ctx, base, false)
		want := fmt.Sprintf(`StopService of service %q refused: services that depend on it are running: %q; stop them first, or call StopService with force to stop them too`, base, dependent)
		if err == nil || err.Error() != want {
			t.Fatalf("StopService without force = %v\nwant %q", err, want)
		}
		if got := get(base).Status; got != stateRunning {
			t.Fatalf("a refused stop left the service %s", stateName(got))
		}
	}

	if err := n.StopService(ctx, base, true); err != nil {
		t.Fatal(err)
	}
	if got := get(base).Status; got != stateStopped {
		t.Fatalf("after StopService the service is %s", stateName(got))
	}
	if len(deps) > 0 {
		if got := get(dependent).Status; got != stateStopped {
			t.Fatalf("after StopService with force the dependent service is %s", stateName(got))
		}
	} else if err := n.StopService(ctx, dependent, false); err != nil {
		t.Fatal(err)
	}
	if err := n.StopService(ctx, base, false); err != nil {
		t.Fatalf("StopService of a stopped service: %v", err)
	}

	// What the dependent depends on, read back from the service control
	// manager: its start, with that service stopped and not allowed, is
	// refused before anything starts.
	scm, err := win32.ConnectServices()
	if err != nil {
		t.Fatal(err)
	}
	dh, err := scm.Open(dependent, win32.ServiceAccessQuery)
	if err != nil {
		t.Fatal(err)
	}
	deps, err = dh.Dependencies()
	dh.Close()
	scm.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) == 0 {
		// Wine 8's QueryServiceConfig reports no dependencies, as its
		// EnumDependentServices lists no dependents: the refusal is
		// tested with the fake on Linux.
		t.Logf("the service control manager reports no dependencies of %s: start refusal not tested here", dependent)
	} else {
		guarded := n
		guarded.MayStart = onlyAllowed(dependent)
		err = guarded.StartService(ctx, dependent)
		want := fmt.Sprintf(`StartService of service %q refused: it would also start services it depends on that are not running and are not allowed services: %q; `, dependent, base)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("StartService of a service whose dependency is not allowed = %v\nwant %q…", err, want)
		}
		if get(base).Status != stateStopped || get(dependent).Status != stateStopped {
			t.Fatal("a refused start started a service")
		}
	}

	_, err = n.GetService(ctx, base+"-missing")
	if !errors.Is(err, win32.ErrNoSuchService) || !errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) ||
		!strings.HasPrefix(err.Error(), fmt.Sprintf("GetService: there is no service named %q on this node", base+"-missing")) {
		t.Fatalf("GetService of a missing service: %v", err)
	}
}

// TestNativeStartDeadline: a service that stays StartPending past the
// group's deadline is answered at the deadline, saying so.
func TestNativeStartDeadline(t *testing.T) {
	underWine(t)
	m, err := mgr.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Disconnect()
	slow := fmt.Sprintf("pipeguard-test-%d-slow", os.Getpid())
	installTestService(t, m, slow, 5*time.Second)

	n := Native{Limits: limits.Bound("system", limits.Limits{Timeout: 2 * time.Second, Concurrency: 8, Setting: "--host-call-timeout-system"})}
	err = n.StartService(context.Background(), slow)
	var de *limits.DeadlineError
	want := fmt.Sprintf(`system StartService did not finish within 2s (host operation deadline; --host-call-timeout-system): service %q was still StartPending, not Running`, slow)
	if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("StartService of a slow service: %v\nwant %q", err, want)
	}
	// It does start: a longer deadline sees it Running.
	n.Limits = limits.Bound("system", limits.Limits{Timeout: time.Minute, Setting: "--host-call-timeout-system"})
	if err := n.StartService(context.Background(), slow); err != nil {
		t.Fatal(err)
	}
}

// TestNativeStartFailure: a service whose program cannot run is an error
// that names it, not a wait until the deadline.
func TestNativeStartFailure(t *testing.T) {
	underWine(t)
	m, err := mgr.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Disconnect()
	name := fmt.Sprintf("pipeguard-test-%d-broken", os.Getpid())
	s, err := m.CreateService(name, `C:\pipeguard\no-such-program.exe`, mgr.Config{StartType: mgr.StartManual})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Delete(); err != nil {
			t.Errorf("deleting service %s: %v", name, err)
		}
		s.Close()
	}()
	n := Native{Limits: limits.Bound("system", limits.Limits{Timeout: time.Minute, Setting: "--host-call-timeout-system"})}
	start := time.Now()
	err = n.StartService(context.Background(), name)
	if want := fmt.Sprintf("StartService: starting service %q: StartService: ", name); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("StartService of a service whose program is missing = %v, want it to start with %q", err, want)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("answered after %v", took)
	}
	t.Log(err)
	if got, err := n.GetService(context.Background(), name); err != nil || got.Status != stateStopped {
		t.Fatalf("GetService = %+v, %v; want it Stopped", got, err)
	}
}

// listActiveDependents asks the service control manager directly.
func listActiveDependents(m *mgr.Mgr, name string) ([]string, error) {
	s, err := m.OpenService(name)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.ListDependentServices(svc.Active)
}
