//go:build !windows

// Command demo runs pipeguard-webhook against a local kube-apiserver and
// etcd, applies sample manifests with kubectl, and shows what the API server
// answered. It stays up for experiments until Ctrl-C (or, on a terminal,
// Enter or q), and then exits 0 after cleaning up; with DEMO_EXIT=1 it
// exits after the samples. It exits non-zero when any sample is not
// answered as expected, so it doubles as a smoke test.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// step is one kubectl command and what the API server should answer.
type step struct {
	title     string
	args      []string
	wantError bool
}

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == clientCommand {
		return runClient(os.Args[2:])
	}
	webhookBin := flag.String("webhook", "bin/pipeguard-webhook", "pipeguard-webhook binary")
	agentBin := flag.String("agent", "bin/pipeguard-agent", "pipeguard-agent binary (its Linux build)")
	cliBin := flag.String("pipeguard", "bin/pipeguard", "pipeguard CLI binary")
	flag.Parse()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "demo: KUBEBUILDER_ASSETS is not set; run it with `make demo`, which builds the control plane first")
		return 2
	}
	for _, bin := range []string{*webhookBin, *agentBin, *cliBin} {
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v; build it with `make build`\n", err)
			return 2
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: finding its own binary for the client processes: %v\n", err)
		return 1
	}

	dir, err := os.MkdirTemp("", "pipeguard-demo-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	banner("Starting kube-apiserver and etcd from " + assets)
	// envtest installs nothing: config/local does, with kubectl. It only
	// issues the webhook's certificate for 127.0.0.1 on a free port.
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		WebhookInstallOptions: envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"},
	}
	if _, err := env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: starting the control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: stopping the control plane: %v\n", err)
		}
	}()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	kubectl := filepath.Join(assets, "kubectl")

	banner("Installing config/local: the CRD and the webhook configuration, calling https://127.0.0.1")
	if err := installLocal(ctx, kubectl, kubeconfig, env.WebhookInstallOptions); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}

	banner("Starting pipeguard-webhook")
	wh, err := startWebhook(ctx, *webhookBin, kubeconfig, env.WebhookInstallOptions, filepath.Join(dir, "webhook.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	defer wh.stop()

	steps := []step{
		{"Namespaces csi-smb and team-a", []string{"apply", "-f", "hack/demo/manifests/00-namespaces.yaml"}, false},
		{"A PipeAccessPolicy that allows the CSI driver's namespace", []string{"apply", "-f", "config/samples/allow-csi-driver-namespace.yaml"}, false},
		{"Wait until the policy is in force", []string{"wait", "--for=condition=Ready", "pipeaccesspolicy/csi-proxy", "--timeout=60s"}, false},
		{"The SMB CSI node DaemonSet in csi-smb: admitted", []string{"apply", "-f", "hack/demo/manifests/10-csi-node-allowed.yaml"}, false},
		{"The same DaemonSet in team-a: rejected", []string{"apply", "-f", "hack/demo/manifests/20-csi-node-team-a.yaml"}, true},
		{"A bare pod mounting //./PIPE/CSI-PROXY-DISK-V1: rejected", []string{"apply", "-f", "hack/demo/manifests/30-bare-pod.yaml"}, true},
		{"Policies in force", []string{"get", "pipeaccesspolicies"}, false},
	}
	failed := 0
	for _, s := range steps {
		if !runStep(ctx, kubectl, kubeconfig, s) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Printf("\n%d step(s) were not answered as expected; webhook log: %s\n", failed, wh.logPath)
		printLog(wh.logPath)
		return 1
	}

	banner("All webhook samples answered as expected")
	banner("pipeguard-agent: the calls of the SMB CSI node plugin and of a hostile pod, then the audit review")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	ag := &agentDemo{dir: dir, kubectl: kubectl, kubeconfig: kubeconfig, cs: cs, cfg: env.Config,
		agentBin: *agentBin, cliBin: *cliBin, self: self}
	defer ag.stop()
	if failed, err := ag.runAll(ctx); err != nil || failed > 0 {
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
		if failed > 0 {
			fmt.Printf("\n%d agent step(s) were not answered as expected; agent log: %s\n", failed, ag.agentLog)
		}
		printLog(ag.agentLog)
		return 1
	}

	banner("All samples answered as expected")
	if os.Getenv("DEMO_EXIT") == "1" {
		return 0
	}
	fd := int(os.Stdin.Fd())
	onTerminal := term.IsTerminal(fd)
	stopWith := "Ctrl-C"
	if onTerminal {
		stopWith = "Ctrl-C, Enter or q"
	}
	fmt.Printf("The control plane stays up. Try it:\n\n  export KUBECONFIG=%s\n  %s get pipeaccesspolicies\n  %s apply -f hack/demo/manifests/30-bare-pod.yaml\n\nwebhook log: %s\nagent audit log: %s\nPress %s to stop and clean up.\n", kubeconfig, kubectl, kubectl, wh.logPath, ag.auditLog, stopWith)
	if onTerminal {
		// The terminal is read key by key: Ctrl-C, Enter or q arrive as
		// input rather than as SIGINT to every process of the terminal's
		// foreground group, make among them, which would end with the
		// signal's status even though the demo cleans up and exits 0.
		if state, err := term.MakeRaw(fd); err == nil {
			defer term.Restore(fd, state)
		}
		go func() {
			b := make([]byte, 1)
			for {
				if n, err := os.Stdin.Read(b); err != nil || n == 1 && strings.ContainsRune("\x03\x04\r\nq", rune(b[0])) {
					stop()
					return
				}
			}
		}()
	}
	<-ctx.Done()
	fmt.Print("\r\ncleaning up\r\n")
	return 0
}

func banner(s string) { fmt.Printf("\n=== %s\n", s) }

func printLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	fmt.Printf("--- last lines of %s\n%s\n", path, strings.Join(lines, "\n"))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
