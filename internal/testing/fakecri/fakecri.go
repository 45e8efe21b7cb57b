package fakecri

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// State is what the runtime reports. It is also the JSON file format of
// cmd/fakecri.
type State struct {
	Pods []Pod `json:"pods"`
	// Hang makes every call block until its caller gives up.
	Hang bool `json:"hang,omitempty"`
}

// Pod is one pod sandbox and its containers.
type Pod struct {
	SandboxID  string      `json:"sandboxID"`
	Name       string      `json:"name"`
	Namespace  string      `json:"namespace"`
	UID        string      `json:"uid"`
	Containers []Container `json:"containers"`
}

// Container is one running container.
type Container struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// PID is the container's process; 0 leaves "pid" out of the verbose
	// info.
	PID int `json:"pid"`
	// Info, when set, replaces the verbose info JSON verbatim (to answer
	// garbage).
	Info string `json:"info,omitempty"`
	// PodUID, when set, overrides the pod UID label of the container (to
	// claim another pod than its sandbox).
	PodUID string `json:"podUID,omitempty"`
}

// Load reads a State from a JSON file.
func Load(path string) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Server is the fake runtime service.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu    sync.Mutex
	state State
	calls map[string]int
	grpc  *grpc.Server
	lis   net.Listener
}

// Start serves state on endpoint ("unix:///path" or, on Windows,
// "npipe:////./pipe/name") until Stop.
func Start(endpoint string, state State) (*Server, error) {
	lis, err := Listen(endpoint)
	if err != nil {
		return nil, err
	}
	s := &Server{state: state, calls: map[string]int{}, grpc: grpc.NewServer(), lis: lis}
	runtimeapi.RegisterRuntimeServiceServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(lis) }()
	return s, nil
}

// Stop closes the listener and every connection.
func (s *Server) Stop() { s.grpc.Stop() }

// Set replaces what the runtime reports.
func (s *Server) Set(state State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = state
}

// Calls returns how many times method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Server) enter(ctx context.Context, method string) (State, error) {
	s.mu.Lock()
	s.calls[method]++
	st := s.state
	s.mu.Unlock()
	if st.Hang {
		<-ctx.Done()
		return st, status.FromContextError(ctx.Err()).Err()
	}
	return st, nil
}

// Version implements runtimeapi.RuntimeServiceServer.
func (s *Server) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if _, err := s.enter(ctx, "Version"); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "1", RuntimeApiVersion: "v1"}, nil
}

// ListPodSandbox implements runtimeapi.RuntimeServiceServer.
func (s *Server) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	st, err := s.enter(ctx, "ListPodSandbox")
	if err != nil {
		return nil, err
	}
	out := &runtimeapi.ListPodSandboxResponse{}
	for _, p := range st.Pods {
		out.Items = append(out.Items, &runtimeapi.PodSandbox{
			Id:       p.SandboxID,
			Metadata: &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID},
			State:    runtimeapi.PodSandboxState_SANDBOX_READY,
			Labels:   map[string]string{"io.kubernetes.pod.name": p.Name, "io.kubernetes.pod.namespace": p.Namespace, "io.kubernetes.pod.uid": p.UID},
		})
	}
	return out, nil
}

// ListContainers implements runtimeapi.RuntimeServiceServer.
func (s *Server) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	st, err := s.enter(ctx, "ListContainers")
	if err != nil {
		return nil, err
	}
	out := &runtimeapi.ListContainersResponse{}
	for _, p := range st.Pods {
		for _, c := range p.Containers {
			uid := p.UID
			if c.PodUID != "" {
				uid = c.PodUID
			}
			out.Containers = append(out.Containers, &runtimeapi.Container{
				Id: c.ID, PodSandboxId: p.SandboxID,
				Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
				State:    runtimeapi.ContainerState_CONTAINER_RUNNING,
				Labels: map[string]string{"io.kubernetes.pod.name": p.Name, "io.kubernetes.pod.namespace": p.Namespace,
					"io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": c.Name},
			})
		}
	}
	return out, nil
}

// ContainerStatus implements runtimeapi.RuntimeServiceServer; with Verbose,
// Info["info"] is containerd's JSON with the container's "pid".
func (s *Server) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	st, err := s.enter(ctx, "ContainerStatus")
	if err != nil {
		return nil, err
	}
	for _, p := range st.Pods {
		for _, c := range p.Containers {
			if c.ID != req.ContainerId {
				continue
			}
			out := &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
				Id: c.ID, Metadata: &runtimeapi.ContainerMetadata{Name: c.Name}, State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
			if req.Verbose {
				info := c.Info
				if info == "" && c.PID != 0 {
					info = `{"pid":` + strconv.Itoa(c.PID) + `,"sandboxID":"` + p.SandboxID + `"}`
				} else if info == "" {
					info = `{"sandboxID":"` + p.SandboxID + `"}`
				}
				out.Info = map[string]string{"info": info}
			}
			return out, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
}
