package identity

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/internal/testing/fakecri"
	"github.com/pipeguard/pipeguard/internal/testing/platform"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fakeProc struct {
	ppid  int
	start time.Time
}

// fakeProcs is a process table: pid -> parent and start.
type fakeProcs map[int]fakeProc

func (f fakeProcs) Process(pid int) (int, time.Time, error) {
	p, ok := f[pid]
	if !ok {
		return 0, time.Time{}, errors.New("no such process")
	}
	return p.ppid, p.start, nil
}

// criEndpoint is a fresh endpoint for a fake runtime: a unix socket, or a
// named pipe on Windows.
func criEndpoint(t *testing.T) string {
	if runtime.GOOS == "windows" {
		return `npipe:////./pipe/pipeguard-fakecri-` + strings.ReplaceAll(t.Name(), "/", "-")
	}
	return "unix://" + filepath.Join(t.TempDir(), "cri.sock")
}

func startCRI(t *testing.T, st fakecri.State) (*fakecri.Server, string) {
	if platform.UnderWine() {
		t.Skip("under Wine, a named pipe served and dialled in one process does not carry data; test/wine runs the CRI mapping across processes")
	}
	t.Helper()
	ep := criEndpoint(t)
	s, err := fakecri.Start(ep, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, ep
}

func newResolver(t *testing.T, ep string, procs ProcessTable, now func() time.Time, timeout time.Duration) *CRIResolver {
	t.Helper()
	r, err := NewCRIResolver(CRIOptions{Endpoint: ep, Processes: procs, Now: now, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func webPod(containers ...fakecri.Container) fakecri.Pod {
	return fakecri.Pod{SandboxID: "sb-web", Name: "web-0", Namespace: "shop", UID: "uid-web", Containers: containers}
}

func TestCRIAttribute(t *testing.T) {
	// Process tree: 1 <- 50 (shim) <- 100 (container) <- 101 <- 102;
	// 1 <- 200 (host process); 300 started before its "parent" 301.
	procs := fakeProcs{
		50: {1, t0}, 100: {50, t0.Add(time.Second)}, 101: {100, t0.Add(2 * time.Second)}, 102: {101, t0.Add(3 * time.Second)},
		200: {1, t0}, 300: {301, t0}, 301: {100, t0.Add(time.Hour)},
		400: {1, t0}, 500: {1, t0},
	}
	cases := map[string]struct {
		state         fakecri.State
		pid           int
		start         string
		wantPod       string
		wantContainer string
		wantNote      string
	}{
		"the container's own process": {
			state: fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}},
			pid:   100, wantPod: "uid-web", wantContainer: "c-app",
		},
		"a grandchild of the container's process": {
			state: fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}},
			pid:   102, wantPod: "uid-web", wantContainer: "c-app",
			wantNote: `CRI: process 102 is a descendant of process 100 of container "app" (c-app)`,
		},
		"a host process whose parents are in no container": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}},
			pid:      200,
			wantNote: "CRI: process 200 and its parents (1 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"a parent that started after its child is a reused pid and ends the chain": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}},
			pid:      300,
			wantNote: "CRI: process 300 and its parents (1 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"a caller whose pid was reused while it was identified": {
			state: fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}},
			pid:   100, start: t0.Add(time.Minute).Format(time.RFC3339Nano),
			wantNote: "CRI: process 100 was replaced by another process with the same pid while it was identified: pod fields stay empty",
		},
		"a container without a pid is never matched": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app"})}},
			pid:      100,
			wantNote: "CRI: process 100 and its parents (2 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"garbage verbose info is never matched": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", Info: `{"pid": "100; rm -rf"`})}},
			pid:      100,
			wantNote: "CRI: process 100 and its parents (2 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"a negative pid is never matched": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", Info: `{"pid": -100}`})}},
			pid:      100,
			wantNote: "CRI: process 100 and its parents (2 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"a container claiming another pod than its sandbox is ignored": {
			state:    fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100, PodUID: "uid-admin"})}},
			pid:      100,
			wantNote: "CRI: process 100 and its parents (2 levels) are in no container the runtime lists: pod fields stay empty",
		},
		"two sandboxes claiming the caller's process: not attributed": {
			state: fakecri.State{Pods: []fakecri.Pod{
				webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100}),
				{SandboxID: "sb-admin", Name: "admin-0", Namespace: "kube-system", UID: "uid-admin", Containers: []fakecri.Container{{ID: "c-admin", Name: "admin", PID: 100}}},
			}},
			pid:      101,
			wantNote: `both claim process 100, so the caller is not attributed: pod fields stay empty`,
		},
		"a runtime that hangs: fields stay empty within the deadline": {
			state:    fakecri.State{Hang: true},
			pid:      100,
			wantNote: "CRI: the runtime did not answer ListPodSandbox within 200ms: pod fields stay empty",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ep := startCRI(t, tc.state)
			r := newResolver(t, ep, procs, nil, 200*time.Millisecond)
			c := &Caller{Source: SourcePeer, PID: tc.pid, ProcessStart: tc.start, UID: -1, GID: -1, Notes: []string{noteNoCRI}}
			r.Attribute(context.Background(), c)
			if c.PodUID != tc.wantPod || c.ContainerID != tc.wantContainer {
				t.Errorf("pod %q container %q, want pod %q container %q (notes %q)", c.PodUID, c.ContainerID, tc.wantPod, tc.wantContainer, c.Notes)
			}
			if tc.wantPod != "" && (c.PodName != "web-0" || c.Namespace != "shop" || !c.PodMapped) {
				t.Errorf("pod %s/%s mapped=%v, want shop/web-0 mapped", c.Namespace, c.PodName, c.PodMapped)
			}
			if tc.wantPod == "" && (c.PodName != "" || c.Namespace != "" || c.PodMapped) {
				t.Errorf("unresolved caller got pod %s/%s mapped=%v", c.Namespace, c.PodName, c.PodMapped)
			}
			notes := strings.Join(c.Notes, "\n")
			if strings.Contains(notes, noteNoCRI) {
				t.Errorf("notes still say no CRI is configured: %q", c.Notes)
			}
			if tc.wantNote != "" && !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes %q, want %q", c.Notes, tc.wantNote)
			}
			if tc.wantNote == "" && len(c.Notes) != 0 {
				t.Errorf("notes %q, want none", c.Notes)
			}
		})
	}
}

// TestCRIAttributesUnattributed: a caller its cgroup left unattributed is
// attributed to the pod the runtime names, and its record says the cgroup
// could not; one the runtime does not list stays unattributed.
func TestCRIAttributesUnattributed(t *testing.T) {
	procs := fakeProcs{50: {1, t0}, 100: {50, t0.Add(time.Second)}, 200: {1, t0}}
	_, ep := startCRI(t, fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}})
	r := newResolver(t, ep, procs, nil, 200*time.Millisecond)
	const why = `cgroup path "/../../x" climbs out of the agent's cgroup namespace, so the caller is unattributed: neither a pod's nor the host's`
	c := &Caller{Source: SourcePeer, PID: 100, UID: -1, GID: -1, Unattributed: why, Notes: []string{why}}
	r.Attribute(context.Background(), c)
	if c.Attribution() != AttributedPod || c.PodUID != "uid-web" || c.Unattributed != "" {
		t.Fatalf("attributed %+v as %s", c, c.Attribution())
	}
	if want := []string{"CRI: the runtime names the caller's pod; from the cgroup alone: " + why}; !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
	other := &Caller{Source: SourcePeer, PID: 200, UID: -1, GID: -1, Unattributed: why, Notes: []string{why}}
	r.Attribute(context.Background(), other)
	if other.Attribution() != Unattributed || other.Unattributed != why || other.PodMapped {
		t.Fatalf("a caller the runtime does not list became %+v (%s)", other, other.Attribution())
	}
}

// A miss refreshes at most once per MinRefresh, so callers cannot make
// every connection query the runtime; a container that started since is
// found once the interval passed.
func TestCRIRefreshIsRateLimited(t *testing.T) {
	procs := fakeProcs{100: {1, t0}, 200: {1, t0}}
	srv, ep := startCRI(t, fakecri.State{})
	now := t0
	r := newResolver(t, ep, procs, func() time.Time { return now }, time.Second)

	for range 5 {
		c := &Caller{PID: 100}
		r.Attribute(context.Background(), c)
		if c.PodUID != "" {
			t.Fatalf("attributed to %q before the container exists", c.PodUID)
		}
	}
	if n := srv.Calls("ListPodSandbox"); n != 1 {
		t.Errorf("ListPodSandbox called %d times for 5 misses within the interval, want 1", n)
	}
	c := &Caller{PID: 100}
	srv.Set(fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}})
	r.Attribute(context.Background(), c)
	if want := "CRI: process 100 and its parents are in no container the runtime listed, and the runtime is asked again at most every 2s: pod fields stay empty"; len(c.Notes) != 1 || c.Notes[0] != want {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}

	now = now.Add(DefaultCRIRefresh)
	c = &Caller{PID: 100}
	r.Attribute(context.Background(), c)
	if c.PodUID != "uid-web" {
		t.Fatalf("pod %q after the interval, want uid-web (notes %q)", c.PodUID, c.Notes)
	}
	// A hit needs no call, and the container's pid is asked once.
	for range 3 {
		r.Attribute(context.Background(), &Caller{PID: 100})
	}
	if n := srv.Calls("ListPodSandbox"); n != 2 {
		t.Errorf("ListPodSandbox called %d times, want 2", n)
	}
	if n := srv.Calls("ContainerStatus"); n != 1 {
		t.Errorf("ContainerStatus called %d times, want 1", n)
	}
}

// A process that reuses a container's pid after the container was listed
// does not inherit it, even when the runtime still lists the container.
func TestCRIReusedContainerPID(t *testing.T) {
	procs := fakeProcs{100: {1, t0}}
	_, ep := startCRI(t, fakecri.State{Pods: []fakecri.Pod{webPod(fakecri.Container{ID: "c-app", Name: "app", PID: 100})}})
	now := t0
	r := newResolver(t, ep, procs, func() time.Time { return now }, time.Second)
	c := &Caller{PID: 100}
	r.Attribute(context.Background(), c)
	if c.PodUID != "uid-web" {
		t.Fatalf("pod %q, want uid-web (notes %q)", c.PodUID, c.Notes)
	}
	procs[100] = fakeProc{1, t0.Add(time.Hour)} // the container's process exited; its pid was reused
	now = now.Add(time.Hour)
	c = &Caller{PID: 100}
	r.Attribute(context.Background(), c)
	if c.PodUID != "" || c.PodMapped {
		t.Fatalf("a process reusing the container's pid was attributed to %q", c.PodUID)
	}
	if want := "CRI: process 100 and its parents (1 levels) are in no container the runtime lists: pod fields stay empty"; len(c.Notes) != 1 || c.Notes[0] != want {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
}

func TestParseCRIEndpoint(t *testing.T) {
	cases := map[string]struct {
		in      string
		wantOK  bool
		wantErr string
	}{
		"empty disables":  {in: ""},
		"none disables":   {in: "none"},
		"containerd unix": {in: "unix:///run/containerd/containerd.sock", wantOK: true},
		"containerd pipe": {in: "npipe:////./pipe/containerd-containerd", wantOK: true},
		"a bare path":     {in: "/run/containerd/containerd.sock", wantErr: `CRI endpoint "/run/containerd/containerd.sock": want unix:///path/to/socket or npipe:////./pipe/name, or none to disable`},
		"tcp":             {in: "tcp://10.0.0.1:1234", wantErr: "want unix:///path/to/socket or npipe:////./pipe/name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ok, err := ParseCRIEndpoint(tc.in)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
