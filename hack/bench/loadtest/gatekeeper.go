package main

import (
	"bytes"
	"cmp"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/hack/bench/internal/results"
	"github.com/pipeguard/pipeguard/hack/bench/internal/sysinfo"
)

// gatekeeperModule is the Go module Gatekeeper is built from (see
// hack/tools/gatekeeper). gatekeeperStartTimeout bounds how long a
// Gatekeeper process may take to decide every kind of review of the mix as
// pipeguard does (list its templates and constraints, compile the rego,
// cache the namespaces); gatekeeperStopTimeout bounds its shutdown.
const (
	gatekeeperModule       = "github.com/open-policy-agent/gatekeeper/v3"
	gatekeeperStartTimeout = 2 * time.Minute
	gatekeeperStopTimeout  = 10 * time.Second
)

// gatekeeperEnv is the control plane Gatekeeper runs on, for all rounds:
// kube-apiserver and etcd with Gatekeeper's CRDs, the ConstraintTemplate,
// the Constraint and the namespaces of the mix.
type gatekeeperEnv struct {
	bin, dir, kubeconfig string
	cfg                  *rest.Config
	stopCP               func() error
	peer                 results.GatekeeperPeer // what runs, for the report
	starts               int                    // processes started, to name their logs
}

// startGatekeeperEnv starts the control plane for the Gatekeeper executable
// bin, with the CRDs of Gatekeeper's deploy/gatekeeper.yaml for the version
// bin was built from.
func startGatekeeperEnv(ctx context.Context, bin string, namespaceCount int, log io.Writer) (_ *gatekeeperEnv, err error) {
	var manifest, dir string
	version, err := gatekeeperVersion(bin)
	if err == nil {
		manifest, err = gatekeeperManifest(ctx, version)
	}
	if err == nil {
		dir, err = os.MkdirTemp("", "pipeguard-loadtest-gatekeeper-")
	}
	if err != nil {
		return nil, err
	}
	e := &gatekeeperEnv{bin: bin, dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"),
		peer: results.GatekeeperPeer{Version: version, Rego: gatekeeperRego, Kinds: constraintKinds}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
		}
	}()
	fmt.Fprintf(log, "gatekeeper %s: starting kube-apiserver and etcd with the CRDs of %s\n", version, manifest)
	var kubeconfig []byte
	if e.cfg, kubeconfig, e.stopCP, err = startControlPlane([]string{manifest}); err != nil {
		return nil, fmt.Errorf("the %s target runs on a local control plane: %w", TargetGatekeeper, err)
	}
	if err := os.WriteFile(e.kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	c, err := crclient.New(e.cfg, crclient.Options{})
	if err != nil {
		return nil, err
	}
	// The namespaces of the mix, labelled as pipeguard's lookup has them,
	// and Gatekeeper's own.
	ns := namespaces(namespaceCount)
	ns[gatekeeperNamespace] = nil
	for name, labels := range ns {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	if err := c.Create(ctx, gatekeeperTemplate()); err != nil {
		return nil, fmt.Errorf("creating the ConstraintTemplate: %w", err)
	}
	if err := e.generate(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "gatekeeper %s: ConstraintTemplate %s and Constraint %s created\n", version, gatekeeperTemplateName, gatekeeperConstraintName)
	return e, nil
}

// stop stops the control plane and removes the files.
func (e *gatekeeperEnv) stop() (err error) {
	if e.stopCP != nil {
		err = e.stopCP()
	}
	return errors.Join(err, os.RemoveAll(e.dir))
}

// gatekeeperVersion checks that bin is a Go executable built from
// Gatekeeper's module and returns the module's version.
func gatekeeperVersion(bin string) (string, error) {
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("the %s target runs Gatekeeper's executable %s, which does not exist: build it with `make bench-gatekeeper` (or pass --gatekeeper), or leave %s out of --targets",
			TargetGatekeeper, bin, TargetGatekeeper)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("--gatekeeper %s: not a Go executable: %w", bin, err)
	}
	for _, d := range append(info.Deps, &info.Main) {
		if d.Path == gatekeeperModule {
			return d.Version, nil
		}
	}
	return "", fmt.Errorf("--gatekeeper %s was not built from %s (hack/tools/gatekeeper builds it)", bin, gatekeeperModule)
}

// gatekeeperManifest returns the path of deploy/gatekeeper.yaml in the
// module cache's copy of Gatekeeper at version, downloading it if need be.
func gatekeeperManifest(ctx context.Context, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", gatekeeperModule+"@"+version)
	// Outside any module, so that no go.mod or go.work is read or changed.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding Gatekeeper %s's manifest with go mod download: %w: %s", version, err, strings.TrimSpace(stderr.String()))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no module directory (%v %s)", gatekeeperModule, version, err, m.Error)
	}
	return filepath.Join(m.Dir, "deploy", "gatekeeper.yaml"), nil
}

// generate runs Gatekeeper's generate operation (its audit pod's in a
// cluster; here beside the webhook operation, which starts the template
// controller) until it has made the Constraint's CRD from the
// ConstraintTemplate, then creates the Constraint and stops it.
func (e *gatekeeperEnv) generate(ctx context.Context) error {
	p, err := e.launch("", "webhook", "generate")
	if err != nil {
		return err
	}
	err = p.retry(ctx, "made no CRD of kind "+gatekeeperConstraintKind+" from the ConstraintTemplate", func() error {
		// A fresh client each time: the kind is new to its RESTMapper.
		c, err := crclient.New(e.cfg, crclient.Options{})
		if err == nil {
			err = crclient.IgnoreAlreadyExists(c.Create(ctx, gatekeeperConstraint()))
		}
		return err
	})
	return errors.Join(err, p.Stop())
}

// gatekeeperProc is a running Gatekeeper process.
type gatekeeperProc struct {
	serving
	cmd              *exec.Cmd
	certDir, logPath string
	exited           chan struct{}
	waitErr          error
}

// launch starts Gatekeeper for operations with its deployment's arguments
// on loopback ports, with a certificate of its own, no shutdown delay,
// outside a pod, and GOGC gogc ("": Go's default, as deployed). The command
// line of the measured processes (webhook operation alone) is recorded.
func (e *gatekeeperEnv) launch(gogc string, operations ...string) (*gatekeeperProc, error) {
	e.starts++
	certDir, err := os.MkdirTemp(e.dir, "certs-")
	if err != nil {
		return nil, err
	}
	caPEM, err := writeCert(certDir)
	vary := map[string]string{"certs": certDir}
	for _, port := range []string{"port", "health", "prometheus"} {
		var n int
		if err == nil {
			n, err = freePort()
		}
		vary[port] = strconv.Itoa(n)
	}
	if err != nil {
		return nil, err
	}
	vary["health"] = "127.0.0.1:" + vary["health"]
	// The ports and the directory, which change from run to run, are
	// recorded as "…".
	var ops, args, recorded []string
	for _, o := range operations {
		ops = append(ops, "--operation="+o)
	}
	for _, a := range append(ops, "--exempt-namespace="+gatekeeperNamespace, "--disable-opa-builtin={http.send}", "--logtostderr",
		"--host=127.0.0.1", "--port=$port", "--cert-dir=$certs", "--disable-cert-rotation", "--health-addr=$health", "--prometheus-port=$prometheus",
		"--shutdown-delay=0", "--debug-use-fake-pod", "--log-level=WARNING") {
		args = append(args, os.Expand(a, func(k string) string { return vary[k] }))
		recorded = append(recorded, os.Expand(a, func(string) string { return "…" }))
	}
	if len(operations) == 1 {
		e.peer.Args = recorded
	}
	p := &gatekeeperProc{serving: serving{URL: "https://127.0.0.1:" + vary["port"] + "/v1/admit", CAPEM: caPEM}, certDir: certDir,
		logPath: filepath.Join(e.dir, fmt.Sprintf("gatekeeper-%d-%s.log", e.starts, strings.Join(operations, "-"))), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(e.bin, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "POD_NAMESPACE="+gatekeeperNamespace, "GOGC="+cmp.Or(gogc, "100"))
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", e.bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// CPU is the process's CPU time so far.
func (p *gatekeeperProc) CPU() time.Duration { return sysinfo.CPUTime(p.cmd.Process.Pid) }

// PeakRSS is the process's peak RSS so far.
func (p *gatekeeperProc) PeakRSS() int64 { return sysinfo.PeakRSS(p.cmd.Process.Pid) }

// Stop ends the process (SIGTERM, then SIGKILL after gatekeeperStopTimeout)
// and removes its certificate.
func (p *gatekeeperProc) Stop() error {
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

func (p *gatekeeperProc) exitError() error {
	return fmt.Errorf("gatekeeper exited (%v); its log: %s", p.waitErr, p.logTail())
}

// logTail is the end of the process's log.
func (p *gatekeeperProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if b = b[max(0, len(b)-2000):]; len(b) == 0 {
		return "(empty)"
	}
	return "\n" + strings.TrimSpace(string(b))
}

// retry calls try every 250 ms until it succeeds, the process exits, ctx
// ends, or gatekeeperStartTimeout passes; then it says what Gatekeeper
// failed to do, with try's last error and the end of its log.
func (p *gatekeeperProc) retry(ctx context.Context, failed string, try func() error) error {
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
			return fmt.Errorf("gatekeeper %s within %v (last error: %w); its log: %s", failed, gatekeeperStartTimeout, err, p.logTail())
		}
	}
}
