package fakecri

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"pods":[{"sandboxID":"sb","name":"web-0","namespace":"shop","uid":"u","containers":[{"id":"c","name":"app","pid":7}]}]}`), 0o644)
	st, err := Load(good)
	if err != nil || len(st.Pods) != 1 || st.Pods[0].Containers[0].PID != 7 {
		t.Fatalf("Load = %+v, %v", st, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"pods": [`), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Fatalf("Load(bad) = %v, want an error naming the file", err)
	}
}

// The server answers over real gRPC as containerd does: labels on
// sandboxes and containers, and the pid in the verbose info.
func TestServerAnswersAsContainerd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix socket endpoint")
	}
	sock := filepath.Join(t.TempDir(), "cri.sock")
	s, err := Start("unix://"+sock, State{Pods: []Pod{{SandboxID: "sb", Name: "web-0", Namespace: "shop", UID: "u",
		Containers: []Container{{ID: "c", Name: "app", PID: 7}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := runtimeapi.NewRuntimeServiceClient(conn)
	ctx := context.Background()
	cs, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(cs.Containers) != 1 || cs.Containers[0].Labels["io.kubernetes.pod.uid"] != "u" || cs.Containers[0].PodSandboxId != "sb" {
		t.Fatalf("ListContainers = %v, %v", cs, err)
	}
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "c", Verbose: true})
	if err != nil || st.Info["info"] != `{"pid":7,"sandboxID":"sb"}` {
		t.Fatalf("ContainerStatus = %v, %v", st, err)
	}
	if _, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "gone"}); err == nil || !strings.Contains(err.Error(), `container "gone" not found`) {
		t.Fatalf("ContainerStatus(gone) = %v", err)
	}
}
