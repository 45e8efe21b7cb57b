//go:build wine && linux

package wine

import (
	"strings"
	"testing"
	"time"
)

// Two unformatted volumes on one disk of the fixture.
const (
	heldVolume  = `\\?\Volume{7e57da7a-0b0e-4c0d-9e11-0000000000a1}\`
	otherVolume = `\\?\Volume{7e57da7a-0b0e-4c0d-9e11-0000000000a2}\`
)

// TestHeldFormatIsCutAtItsDeadline formats a volume whose MSFT_Volume.Format
// never answers (the fixture holds it): the call answers DeadlineExceeded at
// --host-call-timeout-volume, naming the operation and the flags; the next
// format of that volume is refused with Aborted without reaching WMI, since
// the provider may still be formatting it; another volume formats; and the
// agent created no process.
func TestHeldFormatIsCutAtItsDeadline(t *testing.T) {
	p := need(t)
	volume := func(id string, partition int) map[string]any {
		return map[string]any{"id": id, "partition": partition, "total": 1 << 30, "free": 1 << 30,
			"extents": []any{map[string]any{"disk": 5, "offset": partition << 30, "length": 1 << 30}}}
	}
	fixture := map[string]any{
		"disks":    []any{map[string]any{"number": 5, "serial": "held", "size": 3 << 30}},
		"volumes":  []any{volume(heldVolume, 1), volume(otherVolume, 2)},
		"wmiHolds": []any{map[string]any{"method": "MSFT_Volume.Format", "volume": heldVolume}},
	}
	a := startFixtureAgent(t, p, fixture, "--host-call-timeout-volume", "5s")
	format := func(id string) call { return call{"volume/v1", "FormatVolume", map[string]any{"volumeId": id}} }

	start := time.Now()
	r := calls(t, p, format(heldVolume))[0]
	took := time.Since(start)
	const deadline = "volume MSFT_Volume.Format did not finish within 5s (host operation deadline; --host-call-timeout-volume"
	if r.Code != "DeadlineExceeded" || !strings.Contains(r.Message, deadline) {
		t.Fatalf("the held FormatVolume: %s %q, want DeadlineExceeded with %q", r.Code, r.Message, deadline)
	}
	if took < 5*time.Second || took > 45*time.Second { // csiclient's own start under Wine included
		t.Fatalf("the held call answered after %v, want its 5s deadline", took)
	}

	rs := calls(t, p, format(heldVolume), format(otherVolume))
	refused := "volume FormatVolume of " + heldVolume + " is refused: FormatVolume of this volume started "
	if rs[0].Code != "Aborted" || !strings.Contains(rs[0].Message, refused) || !strings.HasSuffix(rs[0].Message, ", retry later") {
		t.Errorf("the second FormatVolume of the held volume: %s %q, want Aborted with %q and its advice", rs[0].Code, rs[0].Message, refused)
	}
	if rs[1].Code != "OK" {
		t.Errorf("FormatVolume of another volume: %s %q, want OK", rs[1].Code, rs[1].Message)
	}

	var formats []wmiCall
	for _, c := range a.wmiCalls(t) {
		if c.Kind == "call" && c.Method == "MSFT_Volume.Format" {
			formats = append(formats, c)
		}
	}
	switch {
	case len(formats) != 2:
		t.Errorf("%d MSFT_Volume.Format calls reached WMI, want 2 (the held one and the other volume's): %+v", len(formats), formats)
	case !formats[0].Held || formats[0].On != "volume "+heldVolume || !strings.Contains(formats[0].Error, "deadline exceeded"):
		t.Errorf("the first Format: %+v, want held on %s until its context's deadline", formats[0], heldVolume)
	case formats[1].Held || formats[1].On != "volume "+otherVolume || formats[1].ReturnValue == nil || *formats[1].ReturnValue != 0:
		t.Errorf("the second Format: %+v, want %s formatted, returning 0", formats[1], otherVolume)
	}
	a.checkNoProcess(t)
}
