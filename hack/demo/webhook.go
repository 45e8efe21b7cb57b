//go:build !windows

package main

// The webhook samples: pipeguard-webhook started against the control plane,
// and each kubectl command with what the API server should answer.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

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
