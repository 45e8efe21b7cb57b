package app

import (
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// TestWMIThreadsCoverTheGroupSlots: the WMI threads are never the queue a
// call waits in behind another group's or caller's calls. Every group
// that calls WMI can have all its slots running at once with a thread
// each, so only the groups' slots, shared between callers, decide who
// waits.
func TestWMIThreadsCoverTheGroupSlots(t *testing.T) {
	slots := 0
	for _, g := range []string{"disk", "volume", "smb", "iscsi"} {
		l, ok := DefaultLimits[g]
		if !ok || l.Concurrency <= 0 {
			t.Fatalf("group %s has no slot cap in DefaultLimits", g)
		}
		slots += l.Concurrency
	}
	if wmi.Workers < slots {
		t.Errorf("wmi.Workers = %d, under the %d host-call slots of the groups that call WMI: hung calls of one group could leave another without a thread", wmi.Workers, slots)
	}
}
