//go:build !windows

package main

// The calls to the agent: made by client processes (the demo binary run as
// `demo csi-client`) through the generated clients of the unmodified CSI
// Proxy client library, the ones its groups wrap for a Windows driver, over
// the agent's unix sockets. The CRI stand-in places each client process in
// its pod.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	diskv1 "github.com/kubernetes-csi/csi-proxy/client/api/disk/v1"
	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/fakecri"
)

// clientCommand runs the demo binary as a client process.
const clientCommand = "csi-client"

// call is one request a client process makes, and its answer.
type call struct {
	Method string `json:"method"` // Mkdir, CreateSymlink, Rmdir, PartitionDisk
	Path   string `json:"path,omitempty"`
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
	Force  bool   `json:"force,omitempty"`
	Disk   uint32 `json:"disk,omitempty"`
	// StolenToken sends the token file of --stolen-token with this call.
	StolenToken bool `json:"stolenToken,omitempty"`

	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// runClient is the client process: it reads one call per line (JSON) on
// stdin and answers each with the call and its gRPC code and message.
func runClient(args []string) int {
	fs := flag.NewFlagSet(clientCommand, flag.ContinueOnError)
	sockets := fs.String("socket-dir", "", "the agent's socket directory")
	token := fs.String("token", "", "a ServiceAccount token file to send with every call, as a driver's projected token")
	stolen := fs.String("stolen-token", "", "a token file to send with the calls that ask for it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if *token != "" {
		opts = append(opts, identity.WithServiceAccountToken(*token))
	}
	dial := func(group string) (*grpc.ClientConn, error) {
		return grpc.NewClient("unix://"+server.SocketPath(*sockets, group, "v1"), opts...)
	}
	fsConn, err := dial("filesystem")
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi-client: %v\n", err)
		return 1
	}
	defer fsConn.Close()
	diskConn, err := dial("disk")
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi-client: %v\n", err)
		return 1
	}
	defer diskConn.Close()
	fsc, dc := fsv1.NewFilesystemClient(fsConn), diskv1.NewDiskClient(diskConn)

	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c call
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "csi-client: line %q: %v\n", in.Text(), err)
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if c.StolenToken {
			b, err := os.ReadFile(*stolen)
			if err != nil {
				fmt.Fprintf(os.Stderr, "csi-client: %v\n", err)
				cancel()
				return 1
			}
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.TrimSpace(string(b)))
		}
		switch c.Method {
		case "Mkdir":
			_, err = fsc.Mkdir(ctx, &fsv1.MkdirRequest{Path: c.Path})
		case "CreateSymlink":
			_, err = fsc.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: c.Source, TargetPath: c.Target})
		case "Rmdir":
			_, err = fsc.Rmdir(ctx, &fsv1.RmdirRequest{Path: c.Path, Force: c.Force})
		case "PartitionDisk":
			_, err = dc.PartitionDisk(ctx, &diskv1.PartitionDiskRequest{DiskNumber: c.Disk})
		default:
			err = fmt.Errorf("csi-client: unknown method %q", c.Method)
		}
		cancel()
		s := status.Convert(err)
		c.Code, c.Message = s.Code().String(), s.Message()
		if err := out.Encode(c); err != nil {
			return 1
		}
	}
	return 0
}

// client is a running client process, placed in pod.
type client struct {
	pod  string // namespace/name
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	desc string
}

func (a *agentDemo) startClient(pod, desc string, args ...string) (*client, error) {
	cmd := exec.Command(a.self, append([]string{clientCommand, "--socket-dir", a.sockets}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the client process %s: %w", a.self, err)
	}
	return &client{pod: pod, cmd: cmd, in: in, out: bufio.NewScanner(out), desc: desc}, nil
}

func (c *client) do(req call) (call, error) {
	b, _ := json.Marshal(req)
	if _, err := fmt.Fprintf(c.in, "%s\n", b); err != nil {
		return call{}, fmt.Errorf("client process of %s: %w", c.pod, err)
	}
	if !c.out.Scan() {
		return call{}, fmt.Errorf("client process of %s ended without an answer (%v)", c.pod, c.out.Err())
	}
	var got call
	err := json.Unmarshal(c.out.Bytes(), &got)
	return got, err
}

func (c *client) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}

// callStep is one call and the code the caller should get.
type callStep struct {
	title string
	by    *client
	req   call
	want  string
}

// calls runs the allowed calls of the SMB CSI node plugin and the refused
// ones of a hostile pod, and returns how many were not answered as expected.
func (a *agentDemo) calls() (int, error) {
	smb, err := a.startClient("csi-smb/csi-smb-node", "with its bound token", "--token", a.tokenFile)
	if err != nil {
		return 0, err
	}
	defer smb.close()
	intruder, err := a.startClient("team-a/intruder", "", "--stolen-token", a.tokenFile)
	if err != nil {
		return 0, err
	}
	defer intruder.close()
	// The runtime lists each client process as its pod's container.
	var state fakecri.State
	for _, c := range []*client{smb, intruder} {
		p := a.pods[c.pod]
		state.Pods = append(state.Pods, fakecri.Pod{SandboxID: "sandbox-" + p.Name, Name: p.Name, Namespace: p.Namespace, UID: string(p.UID),
			Containers: []fakecri.Container{{ID: "container-" + p.Name, Name: p.Spec.Containers[0].Name, PID: c.cmd.Process.Pid}}})
		fmt.Printf("CRI: pod %s (uid %s), container %q: process %d\n", c.pod, p.UID, p.Spec.Containers[0].Name, c.cmd.Process.Pid)
	}
	a.cri.Set(state)

	staging := filepath.Join(a.kubelet, "plugins", "kubernetes.io", "csi", "smb.csi.k8s.io",
		"3f9a2c1e8b7d6054a1f2e3d4c5b6a7980f1e2d3c4b5a69788796a5b4c3d2e1f0", "globalmount")
	steps := []callStep{
		{"csi-smb-node stages an SMB volume (NodeStageVolume): Mkdir of its staging path: allowed",
			smb, call{Method: "Mkdir", Path: staging}, "OK"},
		{"csi-smb-node publishes it (NodePublishVolume): CreateSymlink at the pod's CSI publish path to the staging path: allowed",
			smb, call{Method: "CreateSymlink", Source: staging, Target: filepath.Join(a.publishDir(), "mount")}, "OK"},
		{"team-a/intruder removes the kubelet root itself (Rmdir with force): refused",
			intruder, call{Method: "Rmdir", Path: a.kubelet, Force: true}, "PermissionDenied"},
		{"team-a/intruder creates a directory outside the roots, /etc/cron.d/pipeguard-demo (Mkdir): refused",
			intruder, call{Method: "Mkdir", Path: "/etc/cron.d/pipeguard-demo"}, "PermissionDenied"},
		{"team-a/intruder partitions a disk (disk v1 PartitionDisk), which the agent policy config/samples/agent allows only to kube-system's Azure Disk driver: refused",
			intruder, call{Method: "PartitionDisk", Disk: 1}, "PermissionDenied"},
		{"team-a/intruder sends the token of csi-smb-node with a Mkdir: refused",
			intruder, call{Method: "Mkdir", Path: staging + "-2", StolenToken: true}, "Unauthenticated"},
	}
	failed := 0
	for _, s := range steps {
		banner(s.title)
		who := "pod " + s.by.pod
		if s.by.desc != "" {
			who += ", " + s.by.desc
		}
		fmt.Printf("$ %s   # from %s (pid %d)\n", describe(s.req), who, s.by.cmd.Process.Pid)
		got, err := s.by.do(s.req)
		if err != nil {
			return failed, err
		}
		if got.Code == "OK" {
			fmt.Println("OK")
		} else {
			fmt.Printf("%s: %s\n", got.Code, got.Message)
		}
		if got.Code != s.want {
			fmt.Printf("!! expected %s\n", s.want)
			failed++
		}
	}
	return failed, nil
}

// describe shows a call as the CSI Proxy method and its request fields.
func describe(c call) string {
	switch c.Method {
	case "Mkdir":
		return fmt.Sprintf("filesystem/v1 Mkdir {path: %q}", c.Path)
	case "CreateSymlink":
		return fmt.Sprintf("filesystem/v1 CreateSymlink {source_path: %q, target_path: %q}", c.Source, c.Target)
	case "Rmdir":
		return fmt.Sprintf("filesystem/v1 Rmdir {path: %q, force: %t}", c.Path, c.Force)
	case "PartitionDisk":
		return fmt.Sprintf("disk/v1 PartitionDisk {disk_number: %d}", c.Disk)
	}
	return c.Method
}
