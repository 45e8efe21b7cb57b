package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI defaults.
const (
	// DefaultCRITimeout bounds the CRI work of one identification.
	DefaultCRITimeout = 500 * time.Millisecond
	// DefaultCRIRefresh is the least time between two CRI refreshes, so
	// callers cannot make every connection query the runtime.
	DefaultCRIRefresh = 2 * time.Second
	// DefaultCRIDepth bounds the walk up the caller's parent chain.
	DefaultCRIDepth = 16
)

// Pod labels the kubelet sets on CRI sandboxes and containers.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// ProcessTable reads the parent and start time of a process.
type ProcessTable interface {
	Process(pid int) (ppid int, start time.Time, err error)
}

// CRIOptions configure a CRIResolver.
type CRIOptions struct {
	// Endpoint is the runtime's CRI socket: unix:///path or (Windows)
	// npipe:////./pipe/name.
	Endpoint string
	// Timeout bounds the CRI work of one identification; 0 means
	// DefaultCRITimeout. On timeout the pod fields stay empty.
	Timeout time.Duration
	// MinRefresh is the least time between refreshes; 0 means
	// DefaultCRIRefresh.
	MinRefresh time.Duration
	// MaxDepth bounds the parent chain; 0 means DefaultCRIDepth.
	MaxDepth int
	// Processes reads process parents; nil means this OS's process table.
	Processes ProcessTable
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// criContainer is one running container and the process it runs.
type criContainer struct {
	ID, Name, PodUID, PodName, Namespace, SandboxID string
	PID                                             int
	// Start is when PID started, read when the container was listed, so a
	// reused pid does not inherit the mapping.
	Start time.Time
}

// CRIResolver maps a caller's process (or its nearest ancestor that is a
// container's process) to its container and pod through the node's CRI
// runtime. Its view is cached and refreshed on a miss, at most once per
// MinRefresh.
type CRIResolver struct {
	o      CRIOptions
	conn   *grpc.ClientConn
	client runtimeapi.RuntimeServiceClient

	mu    sync.Mutex
	byPID map[int][]criContainer
	// procs maps a container id to its process and that process's start
	// time, read when the container was first seen: neither changes while
	// the container runs, so a process that later reuses the pid never
	// inherits the container.
	procs       map[string]link
	lastRefresh time.Time
	refreshing  chan struct{}
	refreshErr  error
}

// NewCRIResolver connects (lazily) to the runtime at o.Endpoint.
func NewCRIResolver(o CRIOptions) (*CRIResolver, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultCRITimeout
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = DefaultCRIRefresh
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultCRIDepth
	}
	if o.Processes == nil {
		o.Processes = hostProcesses()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dialer, target, err := criDialer(o.Endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %q: %w", o.Endpoint, err)
	}
	return &CRIResolver{o: o, conn: conn, client: runtimeapi.NewRuntimeServiceClient(conn), procs: map[string]link{}}, nil
}

// Close closes the CRI connection.
func (r *CRIResolver) Close() error { return r.conn.Close() }

// WithCRI returns a PeerFunc that identifies the caller with peer and then,
// when its platform did not map it to a pod (Windows, or a Linux cgroup
// layout it does not know), maps it through r.
func WithCRI(peer PeerFunc, r *CRIResolver) PeerFunc {
	if peer == nil {
		peer = peerWith(r.o.Processes)
	}
	return func(conn net.Conn) (*Caller, func(), error) {
		c, release, err := peer(conn)
		if err != nil || c == nil || c.PodUID != "" || c.PID <= 0 {
			return c, release, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
		defer cancel()
		r.Attribute(ctx, c)
		return c, release, nil
	}
}

// Attribute fills in the caller's container and pod from the CRI, within
// ctx and r's timeout. A caller it cannot map for certain keeps empty pod
// fields and gets a note saying why; it never guesses.
func (r *CRIResolver) Attribute(ctx context.Context, c *Caller) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c.Notes = slices.DeleteFunc(c.Notes, func(n string) bool { return n == noteNoCRI })
	ct, note := r.resolve(ctx, c)
	if note != "" {
		c.Notes = append(c.Notes, "CRI: "+note+": pod fields stay empty")
		return
	}
	c.ContainerID, c.Runtime, c.PodUID = ct.ID, "cri", ct.PodUID
	c.PodName, c.Namespace = ct.PodName, ct.Namespace
	c.PodMapped = true
	c.placedByCRI()
	if ct.PID != c.PID {
		c.Notes = append(c.Notes, fmt.Sprintf("CRI: process %d is a descendant of process %d of container %q (%s)", c.PID, ct.PID, ct.Name, ct.ID))
	}
}

// link is one process of the caller's parent chain.
type link struct {
	pid   int
	start time.Time
}

func (r *CRIResolver) resolve(ctx context.Context, c *Caller) (criContainer, string) {
	chain, note := r.chain(c)
	if note != "" {
		return criContainer{}, note
	}
	ct, found, why := r.match(chain)
	if found || why != "" {
		return ct, why
	}
	// A miss: the runtime may have started the container since the last
	// look.
	refreshed, err := r.refresh(ctx)
	switch {
	case err != nil:
		return criContainer{}, err.Error()
	case !refreshed:
		return criContainer{}, fmt.Sprintf("process %d and its parents are in no container the runtime listed, and the runtime is asked again at most every %s", c.PID, r.o.MinRefresh)
	}
	ct, found, why = r.match(chain)
	if found || why != "" {
		return ct, why
	}
	return criContainer{}, fmt.Sprintf("process %d and its parents (%d levels) are in no container the runtime lists", c.PID, len(chain))
}

// chain walks from the caller up its parents. A parent that started after
// its child is a reused pid, which ends the chain.
func (r *CRIResolver) chain(c *Caller) ([]link, string) {
	_, start, err := r.o.Processes.Process(c.PID)
	if err != nil {
		return nil, fmt.Sprintf("process %d: %v", c.PID, err)
	}
	if c.ProcessStart != "" {
		if want, perr := time.Parse(time.RFC3339Nano, c.ProcessStart); perr == nil && !sameStart(want, start) {
			return nil, fmt.Sprintf("process %d was replaced by another process with the same pid while it was identified", c.PID)
		}
	}
	out := []link{{c.PID, start}}
	for len(out) < r.o.MaxDepth {
		last := out[len(out)-1]
		ppid, _, err := r.o.Processes.Process(last.pid)
		if err != nil || ppid <= 1 || ppid == last.pid {
			break
		}
		_, pstart, err := r.o.Processes.Process(ppid)
		if err != nil || pstart.After(last.start) {
			break
		}
		out = append(out, link{ppid, pstart})
	}
	return out, ""
}

// sameStart compares start times at the 10ms resolution of Linux's /proc.
func sameStart(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -10*time.Millisecond && d < 10*time.Millisecond
}

// match finds the nearest process of chain that is a container's. why is
// set when the answer is not certain (conflicting containers, a reused
// pid).
func (r *CRIResolver) match(chain []link) (ct criContainer, found bool, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range chain {
		var hits []criContainer
		for _, x := range r.byPID[l.pid] {
			if sameStart(x.Start, l.start) {
				hits = append(hits, x)
			}
		}
		if len(hits) == 0 {
			continue
		}
		for _, h := range hits[1:] {
			if h.PodUID != hits[0].PodUID || h.SandboxID != hits[0].SandboxID {
				return criContainer{}, false, fmt.Sprintf("containers %q (pod %s) and %q (pod %s) both claim process %d, so the caller is not attributed",
					hits[0].ID, hits[0].PodUID, h.ID, h.PodUID, l.pid)
			}
		}
		return hits[0], true, ""
	}
	return criContainer{}, false, ""
}

// refresh reads the runtime's containers again unless it did within
// MinRefresh. Concurrent callers share one refresh.
func (r *CRIResolver) refresh(ctx context.Context) (bool, error) {
	r.mu.Lock()
	if ch := r.refreshing; ch != nil {
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, fmt.Errorf("the runtime did not answer within %s", r.o.Timeout)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.refreshErr == nil, r.refreshErr
	}
	if !r.lastRefresh.IsZero() && r.o.Now().Sub(r.lastRefresh) < r.o.MinRefresh {
		r.mu.Unlock()
		return false, nil
	}
	ch := make(chan struct{})
	r.refreshing, r.lastRefresh = ch, r.o.Now()
	known := maps.Clone(r.procs)
	r.mu.Unlock()

	byPID, procs, err := r.list(ctx, known)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshing, r.refreshErr = nil, err
	close(ch)
	if err != nil {
		return false, err
	}
	r.byPID, r.procs = byPID, procs
	return true, nil
}

// list reads the sandboxes and running containers, and the pid of each
// container it does not know yet.
func (r *CRIResolver) list(ctx context.Context, known map[string]link) (map[int][]criContainer, map[string]link, error) {
	timeout := func(op string, err error) error {
		// The server may end the call on the deadline it was sent a moment
		// before ctx itself expires here.
		if ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
			return fmt.Errorf("the runtime did not answer %s within %s", op, r.o.Timeout)
		}
		return fmt.Errorf("%s at %s: %w", op, r.o.Endpoint, err)
	}
	sb, err := r.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, nil, timeout("ListPodSandbox", err)
	}
	sandboxes := map[string]*runtimeapi.PodSandbox{}
	for _, s := range sb.GetItems() {
		sandboxes[s.GetId()] = s
	}
	cs, err := r.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		return nil, nil, timeout("ListContainers", err)
	}
	byPID, procs := map[int][]criContainer{}, map[string]link{}
	for _, c := range cs.GetContainers() {
		s := sandboxes[c.GetPodSandboxId()]
		if s == nil {
			continue // its sandbox is gone, or the runtime answered garbage
		}
		uid := s.GetMetadata().GetUid()
		if l := c.GetLabels()[labelPodUID]; uid == "" || (l != "" && l != uid) {
			continue // a container claiming another pod than its sandbox's
		}
		proc, ok := known[c.GetId()]
		if !ok {
			st, err := r.client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId(), Verbose: true})
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, timeout("ContainerStatus", err)
				}
				continue
			}
			pid := infoPID(st.GetInfo())
			if pid <= 0 {
				continue // no pid: the container cannot be matched to a process
			}
			_, start, err := r.o.Processes.Process(pid)
			if err != nil {
				continue // the process is gone
			}
			proc = link{pid, start}
		}
		procs[c.GetId()] = proc
		name := c.GetLabels()[labelContainerName]
		if name == "" {
			name = c.GetMetadata().GetName()
		}
		byPID[proc.pid] = append(byPID[proc.pid], criContainer{ID: c.GetId(), Name: name, PodUID: uid,
			PodName:   firstNonEmpty(s.GetMetadata().GetName(), s.GetLabels()[labelPodName]),
			Namespace: firstNonEmpty(s.GetMetadata().GetNamespace(), s.GetLabels()[labelPodNamespace]),
			SandboxID: s.GetId(), PID: proc.pid, Start: proc.start})
	}
	return byPID, procs, nil
}

// infoPID is the "pid" of containerd's verbose container info; 0 when it
// is missing or not a positive integer.
func infoPID(info map[string]string) int {
	var v struct {
		PID json.Number `json:"pid"`
	}
	if err := json.Unmarshal([]byte(info["info"]), &v); err != nil {
		return 0
	}
	n, err := v.PID.Int64()
	if err != nil || n <= 0 || n > 1<<31 {
		return 0
	}
	return int(n)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var errBadEndpoint = errors.New("want unix:///path/to/socket or npipe:////./pipe/name")
