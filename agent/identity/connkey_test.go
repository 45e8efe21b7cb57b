package identity

import "testing"

// TestConnectionKey: a pod's processes share one caller's connection
// places; outside a pod each process has its own, never one shared by every
// unattributed caller.
func TestConnectionKey(t *testing.T) {
	cases := []struct {
		c    *Caller
		want string
	}{
		{&Caller{PodUID: "u1", PID: 10, ProcessStart: "t"}, "pod u1"},
		{&Caller{PID: 10, ProcessStart: "t", Unattributed: "outside the namespace"}, "process 10 started t"},
		{&Caller{PID: 0, UID: 0}, "user 0"},
		{&Caller{PID: 0, UID: -1, SID: "S-1-5-93-2-1"}, "user S-1-5-93-2-1"},
		{&Caller{PID: 0, UID: -1}, "unknown"},
		{nil, "unknown"},
	}
	for _, tc := range cases {
		if got := (AuthInfo{Caller: tc.c}).ConnectionKey(); got != tc.want {
			t.Errorf("ConnectionKey(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
