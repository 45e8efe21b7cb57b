package runnertest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/runner"
)

func TestFakeRecordsAndAnswers(t *testing.T) {
	boom := errors.New("exit status 1")
	f := &Fake{Respond: func(c runner.Command) ([]byte, error) {
		if c.Script == "fail" {
			return nil, boom
		}
		return []byte("out of " + c.Script), nil
	}}
	out, err := f.Run(context.Background(), runner.PowerShell("Get-Disk", "A=1"))
	if err != nil || string(out) != "out of Get-Disk" {
		t.Fatalf("%q, %v; want the canned output", out, err)
	}
	if _, err := f.Run(context.Background(), runner.PowerShell("fail")); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the canned error", err)
	}
	want := []runner.Command{runner.PowerShell("Get-Disk", "A=1"), runner.PowerShell("fail")}
	got := f.Commands()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded %#v\nwant %#v", got, want)
	}
	got[0].Script = "changed"
	if f.Commands()[0].Script != "Get-Disk" {
		t.Error("changing the returned commands changed the record")
	}
	if out, err := (&Fake{}).Run(context.Background(), runner.Command{}); out != nil || err != nil {
		t.Errorf("a Fake without Respond answered %q, %v; want nothing", out, err)
	}
}

// The checks the injection tests rely on catch a value pasted into the
// command line and one missing from the environment.
func TestFakeChecksCatchPastedValues(t *testing.T) {
	for _, h := range Hostile() {
		pasted := &Fake{}
		_, _ = pasted.Run(context.Background(), runner.PowerShell("Get-Disk -Number '"+h+"'", "N="+h))
		if err := pasted.CheckNoText(h); err == nil {
			t.Errorf("%q pasted into the script passed CheckNoText", h)
		}
		asData := &Fake{}
		_, _ = asData.Run(context.Background(), runner.PowerShell("Get-Disk -Number $Env:N", "N="+h))
		if err := asData.CheckNoText(h); err != nil {
			t.Errorf("%q as data: %v", h, err)
		}
		if err := asData.CheckInEnv(h); err != nil {
			t.Errorf("%q as data: %v", h, err)
		}
	}
	if err := (&Fake{}).CheckInEnv("x"); err == nil || err.Error() != `no command ran with "x"` {
		t.Errorf("CheckInEnv with no command: %v", err)
	}
	missing := &Fake{}
	_, _ = missing.Run(context.Background(), runner.PowerShell("Get-Disk", "N=other"))
	if err := missing.CheckInEnv("x"); err == nil {
		t.Error("CheckInEnv passed a value that is in no environment variable")
	}
	prog := &Fake{}
	_, _ = prog.Run(context.Background(), runner.Command{Program: "x & calc.exe"})
	if err := prog.CheckNoText("calc.exe"); err == nil {
		t.Error("CheckNoText passed a value in the program")
	}
}
