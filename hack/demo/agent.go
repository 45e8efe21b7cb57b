//go:build !windows

package main

// The agent part: pipeguard-agent, its Linux build, on unix sockets in a
// temporary folder, with the demo's API server for TokenReview, the pod
// watch and its audit anchor Lease, and a container runtime (CRI) that
// places the demo's client processes in the pods of 40-agent-node.yaml.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/pipeguard/pipeguard/internal/testing/fakecri"
)

const (
	nodeName       = "demo-node"
	agentNamespace = "pipeguard-agent"
	tokenAudience  = "pipeguard-agent"
)

// agentDemo holds what the agent steps share.
type agentDemo struct {
	dir, kubectl, kubeconfig string
	cs                       *kubernetes.Clientset
	cfg                      *rest.Config
	agentBin, cliBin, self   string

	kubelet, sockets, auditLog string
	agentKubeconfig, tokenFile string
	cri                        *fakecri.Server
	criEndpoint                string
	agent                      *exec.Cmd
	agentLog                   string
	pods                       map[string]*corev1.Pod
}

// setup creates what the agent needs in the cluster and on disk.
func (a *agentDemo) setup(ctx context.Context) error {
	for _, s := range []step{
		{"The agent's namespace, ServiceAccount, RBAC (pods, TokenReview, its anchor Lease) and anchor policy from config/agent",
			[]string{"apply", "-f", "config/agent/namespace.yaml", "-f", "config/agent/rbac.yaml", "-f", "config/agent/anchor-policy.yaml"}, false},
		{"The node demo-node, the agent's pod on it, and the pods that call the agent: csi-smb/csi-smb-node (the SMB CSI node plugin) and team-a/intruder",
			[]string{"apply", "-f", "hack/demo/manifests/40-agent-node.yaml"}, false},
	} {
		if !runStep(ctx, a.kubectl, a.kubeconfig, s) {
			return fmt.Errorf("step %q was not answered as expected", s.title)
		}
	}
	a.pods = map[string]*corev1.Pod{}
	for _, nn := range []string{agentNamespace + "/pipeguard-agent-demo", "csi-smb/csi-smb-node", "team-a/intruder"} {
		ns, name, _ := strings.Cut(nn, "/")
		p, err := a.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading pod %s: %w", nn, err)
		}
		a.pods[nn] = p
	}

	banner("A kubeconfig for pipeguard-agent: a token of ServiceAccount pipeguard-agent bound to its pod pipeguard-agent-demo (TokenRequest)")
	tok, err := a.boundToken(ctx, a.pods[agentNamespace+"/pipeguard-agent-demo"], nil)
	if err != nil {
		return err
	}
	a.agentKubeconfig = filepath.Join(a.dir, "agent.kubeconfig")
	if err := writeKubeconfig(a.agentKubeconfig, a.cfg, tok); err != nil {
		return err
	}
	fmt.Printf("%s: user system:serviceaccount:%s:pipeguard-agent, bound to pod pipeguard-agent-demo on node %s\n",
		a.agentKubeconfig, agentNamespace, nodeName)

	banner("A token bound to pod csi-smb/csi-smb-node, as its projected serviceAccountToken volume holds (TokenRequest, audience pipeguard-agent)")
	pod := a.pods["csi-smb/csi-smb-node"]
	tok, err = a.boundToken(ctx, pod, []string{tokenAudience})
	if err != nil {
		return err
	}
	a.tokenFile = filepath.Join(a.dir, "csi-smb-node.token")
	if err := os.WriteFile(a.tokenFile, []byte(tok), 0o600); err != nil {
		return err
	}
	fmt.Printf("%s: system:serviceaccount:%s:%s, bound to pod %s (uid %s) on node %s\n",
		a.tokenFile, pod.Namespace, pod.Spec.ServiceAccountName, pod.Name, pod.UID, pod.Spec.NodeName)

	a.kubelet = filepath.Join(a.dir, "kubelet")
	a.sockets = filepath.Join(a.dir, "sockets")
	a.auditLog = filepath.Join(a.dir, "audit", "audit.log")
	// What the kubelet creates before it asks a CSI driver to publish a
	// volume: the pod's CSI volume directory.
	if err := os.MkdirAll(a.publishDir(), 0o750); err != nil {
		return err
	}
	return os.MkdirAll(a.sockets, 0o700)
}

// publishDir is where the kubelet asks the driver to publish volume
// pv-smb for a pod of the app the volume is for.
func (a *agentDemo) publishDir() string {
	return filepath.Join(a.kubelet, "pods", appPodUID, "volumes", "kubernetes.io~csi", "pv-smb")
}

// appPodUID is the pod the SMB volume is published for: the kubelet's pod
// directory of an application pod, not a caller of the agent.
const appPodUID = "7d3c0a52-5a1e-4c44-9d55-0b6f2e8a9c01"

// start runs the CRI stand-in and pipeguard-agent and waits until the agent
// is ready.
func (a *agentDemo) start(ctx context.Context) error {
	banner("A container runtime (CRI) on a unix socket that places the demo's client processes in those pods")
	a.criEndpoint = "unix://" + filepath.Join(a.dir, "cri.sock")
	cri, err := fakecri.Start(a.criEndpoint, fakecri.State{})
	if err != nil {
		return fmt.Errorf("starting the CRI at %s: %w", a.criEndpoint, err)
	}
	a.cri = cri
	fmt.Printf("CRI runtime service at %s\n", a.criEndpoint)

	banner("Starting pipeguard-agent (Linux build) on unix sockets, with the demo's API server for TokenReview and the anchor Lease")
	probePort, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--socket-dir", a.sockets,
		"--kubelet-path", a.kubelet,
		"--kubeconfig", a.agentKubeconfig,
		"--node-name", nodeName,
		"--token-audience", tokenAudience,
		"--cri-endpoint", a.criEndpoint,
		"--audit-log-path", a.auditLog,
		"--audit-anchor-namespace", agentNamespace,
		"--policy-dir", "config/samples/agent",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probePort),
		"--shutdown-timeout", "5s",
	}
	fmt.Printf("$ pipeguard-agent %s\n", strings.Join(args, " "))
	a.agentLog = filepath.Join(a.dir, "agent.log")
	logFile, err := os.Create(a.agentLog)
	if err != nil {
		return err
	}
	defer logFile.Close()
	a.agent = exec.Command(a.agentBin, args...)
	a.agent.Stdout, a.agent.Stderr = logFile, logFile
	if err := a.agent.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", a.agentBin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- a.agent.Wait() }()
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			printLog(a.agentLog)
			a.agent = nil
			return fmt.Errorf("pipeguard-agent exited before it was ready (%v); its log is above", err)
		default:
		}
		if resp, err := http.Get(readyz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("pipeguard-agent is ready (pid %d, sockets in %s, audit log %s)\n", a.agent.Process.Pid, a.sockets, a.auditLog)
				go func() { <-exited }()
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = a.agent.Process.Kill()
			<-exited
			a.agent = nil
			printLog(a.agentLog)
			return fmt.Errorf("pipeguard-agent did not become ready at %s within 60s; its log is above", readyz)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopAgent shuts the agent down as the kubelet would, with SIGTERM: it
// anchors the head of its chain on the way out.
func (a *agentDemo) stopAgent() error {
	if a.agent == nil {
		return nil
	}
	p := a.agent.Process
	a.agent = nil
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping pipeguard-agent: %w", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p.Signal(syscall.Signal(0)) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.Kill()
	return fmt.Errorf("pipeguard-agent did not exit within 20s of SIGTERM; killed it (log: %s)", a.agentLog)
}

// stop ends whatever is still running.
func (a *agentDemo) stop() {
	if err := a.stopAgent(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	if a.cri != nil {
		a.cri.Stop()
	}
}

// boundToken asks the API server for a token of pod's ServiceAccount bound
// to pod, valid for an hour: for audiences, or the API server's own when
// nil.
func (a *agentDemo) boundToken(ctx context.Context, pod *corev1.Pod, audiences []string) (string, error) {
	tr, err := a.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: ptr(int64(3600)),
			BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for ServiceAccount %s/%s bound to pod %s: %w", pod.Namespace, pod.Spec.ServiceAccountName, pod.Name, err)
	}
	return tr.Status.Token, nil
}

// writeKubeconfig writes a kubeconfig for the API server of cfg that
// authenticates with token.
func writeKubeconfig(path string, cfg *rest.Config, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["pipeguard-agent"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "pipeguard-agent"}
	kc.CurrentContext = "demo"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the agent's kubeconfig %s: %w", path, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// runAll sets up and starts the agent, makes the calls, stops the agent and
// reviews its audit log. It returns how many steps were not answered as
// expected.
func (a *agentDemo) runAll(ctx context.Context) (int, error) {
	if err := a.setup(ctx); err != nil {
		return 0, err
	}
	if err := a.start(ctx); err != nil {
		return 0, err
	}
	failed, err := a.calls()
	if err != nil {
		return failed, err
	}
	banner("Stopping pipeguard-agent (SIGTERM): it writes a stop checkpoint and anchors the head of its chain in Lease " + agentNamespace + "/pipeguard-audit-" + nodeName)
	if err := a.stopAgent(); err != nil {
		return failed, err
	}
	fmt.Println("pipeguard-agent stopped")
	n, err := a.review()
	return failed + n, err
}
