package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/agent/guard"
	"github.com/pipeguard/pipeguard/agent/identity"
	"github.com/pipeguard/pipeguard/agent/server"
	"github.com/pipeguard/pipeguard/internal/testing/fakecri"
)

// criClientEnv names the socket the client process calls.
const criClientEnv = "PIPEGUARD_TEST_CRI_CLIENT_SOCKET"

// TestCRIClientProcess is the client process of TestCRIAttribution: once
// told to on stdin, it calls PathExists and prints the audit ID it got.
func TestCRIClientProcess(t *testing.T) {
	sock := os.Getenv(criClientEnv)
	if sock == "" {
		t.Skip("run by TestCRIAttribution as its client process")
	}
	path, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var md metadata.MD
	if _, err := fsv1.NewFilesystemClient(conn).PathExists(context.Background(), &fsv1.PathExistsRequest{Path: strings.TrimSpace(path)}, grpc.Header(&md), askAuditID); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("audit-id=%s\n", strings.Join(md.Get(guard.AuditIDHeader), ","))
}

// TestCRIAttribution runs the agent with a real CRI runtime service (fakecri
// over a unix socket) and real client processes: a process started by a
// container's process is recorded with that container's pod; the test
// process, in no container, keeps empty pod fields and a note saying why.
func TestCRIAttribution(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent's sockets and /proc parents are Linux's here; Windows runs this under its own e2e")
	}
	ep := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	cri, err := fakecri.Start(ep, fakecri.State{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cri.Stop)
	resolver, err := identity.NewCRIResolver(identity.CRIOptions{Endpoint: ep, MinRefresh: time.Nanosecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resolver.Close() })
	g := startGuarded(t, Options{Peer: identity.WithCRI(nil, resolver)}, guard.Options{}, nil)
	inside := filepath.Join(g.kubelet, "pods")
	sock := server.SocketPath(g.socketDir, "filesystem", "v1")

	// The "container process" is a shell whose child makes the call.
	cmd := exec.Command("/bin/sh", "-c", `"$0" -test.run='^TestCRIClientProcess$'; exit $?`, os.Args[0])
	cmd.Env = append(os.Environ(), criClientEnv+"="+sock)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shell := cmd.Process.Pid
	cri.Set(fakecri.State{Pods: []fakecri.Pod{{SandboxID: "sb-web", Name: "web-0", Namespace: "shop", UID: "uid-web",
		Containers: []fakecri.Container{{ID: "c-app", Name: "app", PID: shell}}}}})
	fmt.Fprintln(stdin, inside)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client process: %v\n%s", err, out.String())
	}
	_, idLine, ok := strings.Cut(out.String(), "audit-id=")
	if !ok {
		t.Fatalf("client process printed no audit ID:\n%s", out.String())
	}
	childID := strings.TrimSpace(strings.SplitN(idLine, "\n", 2)[0])

	// The test process itself calls too.
	var md metadata.MD
	if _, err := fsv1.NewFilesystemClient(g.dial(t, "filesystem", "v1")).PathExists(context.Background(), &fsv1.PathExistsRequest{Path: inside}, grpc.Header(&md), askAuditID); err != nil {
		t.Fatal(err)
	}
	hostID := md.Get(guard.AuditIDHeader)[0]

	recs := g.requests(t)
	child := userOf(t, recs, childID)
	if child.ExtraValue(audit.ExtraPodName) != "web-0" || child.ExtraValue(audit.ExtraNamespace) != "shop" ||
		child.ExtraValue(audit.ExtraPodUID) != "uid-web" || child.ExtraValue(audit.ExtraContainerID) != "c-app" {
		t.Errorf("the container's child process was recorded as %+v", child.Extra)
	}
	pid := child.ExtraValue(audit.ExtraPID)
	if want := `CRI: process ` + pid + ` is a descendant of process ` + strconv.Itoa(shell) + ` of container "app" (c-app)`; !slices.Contains(child.Extra[audit.ExtraNote], want) {
		t.Errorf("notes %q, want %q", child.Extra[audit.ExtraNote], want)
	}

	host := userOf(t, recs, hostID)
	if host.ExtraValue(audit.ExtraPodName) != "" || host.ExtraValue(audit.ExtraPodUID) != "" || host.ExtraValue(audit.ExtraContainerID) != "" {
		t.Errorf("the test process, in no container, was recorded as %+v", host.Extra)
	}
	notes := strings.Join(host.Extra[audit.ExtraNote], "\n")
	if want := "CRI: process " + strconv.Itoa(os.Getpid()) + " and its parents ("; !strings.Contains(notes, want) ||
		!strings.Contains(notes, "are in no container the runtime lists: pod fields stay empty") {
		t.Errorf("notes %q, want %q... are in no container the runtime lists: pod fields stay empty", notes, want)
	}
}

func userOf(t *testing.T, recs map[string][]audit.Record, id string) audit.UserInfo {
	t.Helper()
	rs := recs[id]
	if len(rs) == 0 {
		t.Fatalf("no audit record %s", id)
	}
	return rs[0].Event.User
}

func TestCRIPeerOption(t *testing.T) {
	for _, ep := range []string{"", "none"} {
		if r, err := criPeer(ep, 0); r != nil || err != nil {
			t.Errorf("criPeer(%q) = %v, %v; want disabled", ep, r, err)
		}
	}
	_, err := criPeer("tcp://10.0.0.1:1234", 0)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "Guard.CRIEndpoint" ||
		err.Error() != `Guard.CRIEndpoint: CRI endpoint "tcp://10.0.0.1:1234": want unix:///path/to/socket or npipe:////./pipe/name, or none to disable` {
		t.Errorf("err = %v, want an OptionError for Guard.CRIEndpoint", err)
	}
	_, err = criPeer("unix:///run/containerd/containerd.sock", -time.Second)
	if !errors.As(err, &oe) || oe.Option != "Guard.CRITimeout" || err.Error() != "Guard.CRITimeout: -1s is negative" {
		t.Errorf("negative timeout: err = %v, want an OptionError for Guard.CRITimeout", err)
	}
}
