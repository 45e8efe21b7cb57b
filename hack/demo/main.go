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
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
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
	webhookBin := flag.String("webhook", "bin/pipeguard-webhook", "pipeguard-webhook binary")
	flag.Parse()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "demo: KUBEBUILDER_ASSETS is not set; run it with `make demo`, which builds the control plane first")
		return 2
	}
	if _, err := os.Stat(*webhookBin); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v; build it with `make build`\n", err)
		return 2
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
	fmt.Printf("The control plane stays up. Try it:\n\n  export KUBECONFIG=%s\n  %s get pipeaccesspolicies\n  %s apply -f hack/demo/manifests/30-bare-pod.yaml\n\nwebhook log: %s\nPress %s to stop and clean up.\n", kubeconfig, kubectl, kubectl, wh.logPath, stopWith)
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

func runStep(ctx context.Context, kubectl, kubeconfig string, s step) bool {
	banner(s.title)
	fmt.Printf("$ kubectl %s\n", strings.Join(s.args, " "))
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, s.args...)...)
	out, err := cmd.CombinedOutput()
	fmt.Print(string(out))
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		fmt.Printf("!! cannot run kubectl: %v\n", err)
		return false
	case s.wantError && err == nil:
		fmt.Println("!! expected a rejection, but the API server admitted it")
		return false
	case !s.wantError && err != nil:
		fmt.Println("!! expected success")
		return false
	}
	return true
}

type webhookProcess struct {
	cmd     *exec.Cmd
	logPath string
}

func startWebhook(ctx context.Context, bin, kubeconfig string, w envtest.WebhookInstallOptions, logPath string) (*webhookProcess, error) {
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--kubeconfig", kubeconfig,
		"--webhook-host", w.LocalServingHost,
		"--webhook-port", strconv.Itoa(w.LocalServingPort),
		"--webhook-cert-path", w.LocalServingCertDir,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probePort),
		"--drain-delay", "0s",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &webhookProcess{cmd: cmd, logPath: logPath}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(readyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("pipeguard-webhook is ready (pid %d, serving https://%s:%d/validate)\n", cmd.Process.Pid, w.LocalServingHost, w.LocalServingPort)
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			printLog(logPath)
			return nil, fmt.Errorf("pipeguard-webhook did not become ready at %s", readyz)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p *webhookProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

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
