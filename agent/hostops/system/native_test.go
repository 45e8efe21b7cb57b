package system

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/hostile"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// slack is what a slow, shared machine may add to a deadline.
const slack = 10 * time.Second

// native returns a Native over f that polls every millisecond, naming
// --allowed-service in its refusals as the agent does.
func native(f *fakeSCM) Native {
	return Native{Poll: time.Millisecond, connect: f.connect, Namer: agentFlags}
}

// bound is the system group's limits with a short deadline.
func bound(timeout time.Duration) *limits.Bounded {
	return limits.Bound("system", limits.Limits{Timeout: timeout, Concurrency: 2, Setting: "--host-call-timeout-system"})
}

func running(name string, dependsOn ...string) *fakeService {
	return &fakeService{name: name, display: name + " display", startType: startAutomatic, state: stateRunning, dependsOn: dependsOn}
}

func stopped(name string, dependsOn ...string) *fakeService {
	return &fakeService{name: name, display: name + " display", startType: startManual, state: stateStopped, dependsOn: dependsOn}
}

func TestGetService(t *testing.T) {
	f := newFakeSCM(&fakeService{name: "LanmanServer", display: "Server", startType: startAutomatic, state: stateRunning})
	got, err := native(f).GetService(context.Background(), "LanmanServer")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Service{DisplayName: "Server", StartType: 2, Status: 4}); got != want {
		t.Fatalf("GetService = %+v, want %+v", got, want)
	}
	if opens := f.calls("open"); !reflect.DeepEqual(opens, []string{"open LanmanServer query"}) {
		t.Fatalf("opened %v, want the service opened for queries only", opens)
	}
	if changes := f.calls("start", "stop"); changes != nil {
		t.Fatalf("GetService changed the service: %v", changes)
	}
}

func TestUnknownServiceIsNamed(t *testing.T) {
	ctx := context.Background()
	n := native(newFakeSCM(running("csiproxy")))
	calls := map[string]func() error{
		"GetService": func() error {
			_, err := n.GetService(ctx, "nosuch svc")
			return err
		},
		"StartService": func() error { return n.StartService(ctx, "nosuch svc") },
		"StopService":  func() error { return n.StopService(ctx, "nosuch svc", true) },
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			err := call()
			want := op + `: there is no service named "nosuch svc" on this node: give the service's name as sc.exe query lists it (SERVICE_NAME), not its display name`
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, win32.ErrNoSuchService) {
				t.Fatalf("err = %v, want it to start with %q", err, want)
			}
		})
	}
}

func TestHostileNamesAreOnlyNames(t *testing.T) {
	for _, hostile := range hostile.Values() {
		f := newFakeSCM()
		_, err := native(f).GetService(context.Background(), hostile)
		if !errors.Is(err, win32.ErrNoSuchService) || !strings.Contains(err.Error(), `named `+quoteAll([]string{hostile})+` on this node`) {
			t.Errorf("GetService(%q) = %v, want no such service, named", hostile, err)
		}
		if opens := f.calls("open"); !reflect.DeepEqual(opens, []string{"open " + hostile + " query"}) {
			t.Errorf("GetService(%q) opened %q, want the name as given", hostile, opens)
		}
	}
}

func TestStartWaitsForRunning(t *testing.T) {
	svc := stopped("csiproxy")
	svc.afterStart = []uint32{stateStartPending, stateStartPending, stateStartPending, stateRunning}
	f := newFakeSCM(svc)
	if err := native(f).StartService(context.Background(), "csiproxy"); err != nil {
		t.Fatal(err)
	}
	if got := f.stateOf("csiproxy"); got != stateRunning {
		t.Fatalf("StartService returned with the service %s, want Running", stateName(got))
	}
	if got, want := f.calls("open", "start", "stop"), []string{"open csiproxy start", "start csiproxy"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

func TestStartLeavesARunningServiceAlone(t *testing.T) {
	f := newFakeSCM(running("csiproxy"))
	if err := native(f).StartService(context.Background(), "csiproxy"); err != nil {
		t.Fatal(err)
	}
	if got := f.calls("start", "stop"); got != nil {
		t.Fatalf("calls %q, want none", got)
	}
}

func TestStartLetsAStoppingServiceStopFirst(t *testing.T) {
	svc := stopped("csiproxy")
	svc.state = stateStopPending
	svc.script = []uint32{stateStopPending, stateStopPending, stateStopped}
	f := newFakeSCM(svc)
	if err := native(f).StartService(context.Background(), "csiproxy"); err != nil {
		t.Fatal(err)
	}
	if got := f.stateOf("csiproxy"); got != stateRunning {
		t.Fatalf("service %s, want Running", stateName(got))
	}
}

func TestStartFailures(t *testing.T) {
	cases := map[string]struct {
		svc  *fakeService
		want string
	}{
		"stops again": {
			svc:  &fakeService{name: "csiproxy", state: stateStopped, afterStart: []uint32{stateStartPending, stateStopped}},
			want: `StartService: service "csiproxy" stopped again while it was starting: look at the service's own logs or the System event log for why`,
		},
		"paused": {
			svc:  &fakeService{name: "csiproxy", state: statePaused},
			want: `StartService: service "csiproxy" is Paused: StartService does not resume a paused service; resume it on the node with sc.exe continue csiproxy`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := native(newFakeSCM(c.svc)).StartService(context.Background(), "csiproxy")
			if err == nil || err.Error() != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestStuckStartAnswersAtTheDeadline: a service that stays StartPending is
// answered at the group's deadline, naming the operation and what the
// service was doing, not after the request's own (longer) deadline.
func TestStuckStartAnswersAtTheDeadline(t *testing.T) {
	svc := stopped("csiproxy")
	svc.afterStart = []uint32{stateStartPending}
	n := native(newFakeSCM(svc))
	n.Limits = bound(200 * time.Millisecond)
	start := time.Now()
	err := n.StartService(context.Background(), "csiproxy")
	if took := time.Since(start); took > 200*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	var de *limits.DeadlineError
	if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || de.Op != "StartService" {
		t.Fatalf("err = %#v, want a DeadlineError of StartService", err)
	}
	want := `system StartService did not finish within 200ms (host operation deadline; --host-call-timeout-system): service "csiproxy" was still StartPending, not Running; look at the service's own logs or the System event log for why`
	if err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
}

func TestStuckStopAnswersAtTheDeadline(t *testing.T) {
	svc := running("csiproxy")
	svc.afterStop = []uint32{stateStopPending}
	n := native(newFakeSCM(svc))
	n.Limits = bound(200 * time.Millisecond)
	err := n.StopService(context.Background(), "csiproxy", false)
	want := `system StopService did not finish within 200ms (host operation deadline; --host-call-timeout-system): service "csiproxy" was still StopPending, not Stopped; look at the service's own logs or the System event log for why`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
}

func TestRequestEndStopsTheWait(t *testing.T) {
	svc := stopped("csiproxy")
	svc.afterStart = []uint32{stateStartPending}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := native(newFakeSCM(svc)).StartService(ctx, "csiproxy") // no Limits
	if took := time.Since(start); took > 100*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the request's deadline", err)
	}
}

func TestStopWithRunningDependentsIsRefused(t *testing.T) {
	f := newFakeSCM(running("LanmanWorkstation"), running("Browser", "LanmanWorkstation"), running("Netlogon", "LanmanWorkstation"), stopped("SessionEnv", "LanmanWorkstation"))
	err := native(f).StopService(context.Background(), "LanmanWorkstation", false)
	want := `StopService of service "LanmanWorkstation" refused: services that depend on it are running: "Browser", "Netlogon"; stop them first, or call StopService with force to stop them too`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.calls("stop"); got != nil {
		t.Fatalf("a refused stop stopped %q", got)
	}
	if opens := f.calls("open"); !reflect.DeepEqual(opens, []string{"open LanmanWorkstation stop"}) {
		t.Fatalf("opened %q", opens)
	}
}

func TestStopWithStoppedDependents(t *testing.T) {
	f := newFakeSCM(running("LanmanWorkstation"), stopped("Browser", "LanmanWorkstation"))
	if err := native(f).StopService(context.Background(), "LanmanWorkstation", false); err != nil {
		t.Fatal(err)
	}
	if got, want := f.calls("stop"), []string{"stop LanmanWorkstation"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stopped %q, want %q", got, want)
	}
}

// TestForceStopsDependentsFirst: each service is stopped after every
// service that depends on it, directly or not, whether the service control
// manager lists the indirect dependents or not.
func TestForceStopsDependentsFirst(t *testing.T) {
	for _, transitive := range []bool{false, true} {
		name := map[bool]string{false: "direct dependents listed", true: "all dependents listed"}[transitive]
		t.Run(name, func(t *testing.T) {
			f := newFakeSCM(running("A"), running("B", "A"), running("C", "B"), running("D", "A"), stopped("E", "A"), running("Other"))
			f.transitive = transitive
			f.services["c"].afterStop = []uint32{stateStopPending, stateStopPending, stateStopped}
			if err := native(f).StopService(context.Background(), "A", true); err != nil {
				t.Fatal(err)
			}
			if got, want := f.calls("stop"), []string{"stop C", "stop B", "stop D", "stop A"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("stopped %q, want %q", got, want)
			}
			for _, s := range []string{"A", "B", "C", "D", "E"} {
				if st := f.stateOf(s); st != stateStopped {
					t.Errorf("%s is %s", s, stateName(st))
				}
			}
			if st := f.stateOf("Other"); st != stateRunning {
				t.Errorf("Other is %s", stateName(st))
			}
		})
	}
}

func TestStopLeavesAStoppedServiceAlone(t *testing.T) {
	f := newFakeSCM(stopped("csiproxy"))
	if err := native(f).StopService(context.Background(), "csiproxy", true); err != nil {
		t.Fatal(err)
	}
	if got := f.calls("stop", "dependents"); got != nil {
		t.Fatalf("calls %q, want none", got)
	}
}

func TestStopRetriesWhileTheServiceCannotAcceptIt(t *testing.T) {
	svc := running("csiproxy")
	svc.state = stateStartPending
	svc.stopErrs = []error{win32.ErrServiceCannotAcceptControl, win32.ErrServiceCannotAcceptControl}
	f := newFakeSCM(svc)
	if err := native(f).StopService(context.Background(), "csiproxy", false); err != nil {
		t.Fatal(err)
	}
	if got := len(f.calls("stop")); got != 3 {
		t.Fatalf("%d stop controls, want 3", got)
	}
	if st := f.stateOf("csiproxy"); st != stateStopped {
		t.Fatalf("service %s", stateName(st))
	}
}

func TestStopFailures(t *testing.T) {
	cases := map[string]struct {
		services []*fakeService
		err      error
		want     string
	}{
		"stop not accepted": {
			err:  win32.ErrStopNotAccepted,
			want: `StopService: service "csiproxy" does not accept stop requests: it cannot be stopped while it runs: ControlService SERVICE_CONTROL_STOP: the service does not accept the stop control`,
		},
		"dependents started meanwhile": {
			err:  win32.ErrDependentServicesRunning,
			want: `StopService: service "csiproxy" did not stop: services that depend on it started while it was being stopped: ControlService SERVICE_CONTROL_STOP: services that depend on it are running`,
		},
		"access denied": {
			err:  errors.New("Access is denied."),
			want: `StopService: stopping service "csiproxy": ControlService SERVICE_CONTROL_STOP: Access is denied.`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			svc := running("csiproxy")
			svc.stopErrs = []error{c.err}
			err := native(newFakeSCM(svc)).StopService(context.Background(), "csiproxy", false)
			if err == nil || err.Error() != c.want {
				t.Fatalf("err = %v\nwant  %q", err, c.want)
			}
		})
	}
}

func TestDependencyCycleEnds(t *testing.T) {
	f := newFakeSCM(running("A", "B"), running("B", "A"))
	err := native(f).StopService(context.Background(), "A", true)
	want := `StopService: services depend on each other in a cycle ("A", "B" -> "A"): the service control manager's database is inconsistent; stop them on the node`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.calls("stop"); got != nil {
		t.Fatalf("stopped %q", got)
	}
}

func TestDeepDependencyChainEnds(t *testing.T) {
	var services []*fakeService
	services = append(services, running("s0"))
	for i := 1; i <= maxDependentDepth+4; i++ {
		services = append(services, running("s"+strconv.Itoa(i), "s"+strconv.Itoa(i-1)))
	}
	err := native(newFakeSCM(services...)).StopService(context.Background(), "s0", true)
	if err == nil || !strings.HasPrefix(err.Error(), "StopService: services depend on each other more than 16 deep") {
		t.Fatalf("err = %v", err)
	}
}

func TestConnectFailure(t *testing.T) {
	n := Native{connect: func() (win32.Services, error) { return nil, errors.New("Access is denied.") }}
	_, err := n.GetService(context.Background(), "csiproxy")
	if want := "GetService: connecting to the service control manager: Access is denied."; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestBIOSSerialNumberFromFirmware(t *testing.T) {
	raw := rawSMBIOS(biosInformation(), systemInformation(4, "Acme", "Node", "1", "  VMware-42 1a 2b  "))
	n := Native{Firmware: win32test.Firmware(func() ([]byte, error) { return raw, nil })}
	got, err := n.BIOSSerialNumber(context.Background())
	if err != nil || got != "VMware-42 1a 2b" {
		t.Fatalf("BIOSSerialNumber = %q, %v", got, err)
	}

	n.Firmware = win32test.Firmware(func() ([]byte, error) {
		return nil, errors.New("GetSystemFirmwareTable('RSMB', 0): The parameter is incorrect.")
	})
	_, err = n.BIOSSerialNumber(context.Background())
	if want := "reading the BIOS serial number: GetSystemFirmwareTable('RSMB', 0): The parameter is incorrect."; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}

	n.Firmware = win32test.Firmware(func() ([]byte, error) { return raw[:20], nil })
	_, err = n.BIOSSerialNumber(context.Background())
	if want := "reading the BIOS serial number from the SMBIOS tables GetSystemFirmwareTable returned: RawSMBIOSData is truncated"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want it to start with %q", err, want)
	}
}

// TestHungFirmwareCallAnswersAtTheDeadline: a GetSystemFirmwareTable that
// never returns holds no caller past the group's deadline.
func TestHungFirmwareCallAnswersAtTheDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	n := Native{Limits: bound(100 * time.Millisecond), Firmware: win32test.Firmware(func() ([]byte, error) { <-release; return nil, nil })}
	start := time.Now()
	_, err := n.BIOSSerialNumber(context.Background())
	if took := time.Since(start); took > 100*time.Millisecond+slack {
		t.Fatalf("returned after %v", took)
	}
	want := "system BIOSSerialNumber did not finish within 100ms (host operation deadline; --host-call-timeout-system)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
