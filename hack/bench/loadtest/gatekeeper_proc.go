//go:build !windows

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// gatekeeperProc is a running Gatekeeper process.
type gatekeeperProc struct {
	cmd     *exec.Cmd
	pid     string
	url     string
	caPEM   []byte
	certDir string
	logPath string
	exited  chan struct{}
	waitErr error
}

// gatekeeperArgs is Gatekeeper's command line: its deployment's arguments
// (deploy/gatekeeper.yaml) for operations, on loopback ports, with the
// certificate of certDir rather than its own rotation, no shutdown delay,
// and outside a pod.
func gatekeeperArgs(operations []string, port, healthPort, metricsPort int, certDir string) []string {
	var args []string
	for _, o := range operations {
		args = append(args, "--operation="+o)
	}
	return append(args, "--exempt-namespace="+gatekeeperNamespace, "--disable-opa-builtin={http.send}", "--logtostderr",
		"--host=127.0.0.1", "--port="+strconv.Itoa(port), "--cert-dir="+certDir, "--disable-cert-rotation",
		"--health-addr=127.0.0.1:"+strconv.Itoa(healthPort), "--prometheus-port="+strconv.Itoa(metricsPort),
		"--shutdown-delay=0", "--debug-use-fake-pod", "--log-level=WARNING",
	)
}

func (p *gatekeeperProc) CPU() time.Duration { return sysinfo.CPUTime(p.pid) }

func (p *gatekeeperProc) Memory() (rss, hwm int64) { return sysinfo.Memory(p.pid) }

// stop ends the process (SIGTERM, then SIGKILL after stopTimeout) and
// removes its certificate.
func (p *gatekeeperProc) stop() error {
	defer os.RemoveAll(p.certDir)
	select {
	case <-p.exited:
		return p.exitError()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(gatekeeperStopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("gatekeeper did not stop within %v and was killed", gatekeeperStopTimeout)
	}
}

const gatekeeperStopTimeout = 10 * time.Second

func (p *gatekeeperProc) exitError() error {
	return fmt.Errorf("gatekeeper exited (%v); its log: %s", p.waitErr, p.logTail())
}

// logTail is the end of the process's log.
func (p *gatekeeperProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	if len(b) == 0 {
		return "(empty)"
	}
	return "\n" + strings.TrimSpace(string(b))
}

// errGatekeeperTimeout ends retry's error when gatekeeperStartTimeout
// passed first.
var errGatekeeperTimeout = errors.New("timed out")

// retry calls try every 250 ms until it succeeds, the process exits, ctx
// ends, or gatekeeperStartTimeout passes; then it returns try's last
// error joined with errGatekeeperTimeout.
func (p *gatekeeperProc) retry(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(gatekeeperStartTimeout)
	for {
		err := try()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("last error: %w (%w)", err, errGatekeeperTimeout)
		}
	}
}
