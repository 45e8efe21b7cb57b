//go:build !windows

package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/pipeguard/pipeguard/internal/testenv"
)

// gatekeeperModule is the Go module Gatekeeper is built from (see
// hack/tools/gatekeeper).
const gatekeeperModule = "github.com/open-policy-agent/gatekeeper/v3"

// gatekeeperStartTimeout bounds how long a Gatekeeper process may take,
// once started, to decide every kind of review of the mix as pipeguard
// does: to list its templates and constraints, compile the rego and cache
// the namespaces.
const gatekeeperStartTimeout = 2 * time.Minute

// gatekeeperEnv is the control plane Gatekeeper runs on: kube-apiserver and
// etcd with Gatekeeper's CRDs, the ConstraintTemplate, the Constraint and
// the namespaces of the mix. It outlives the rounds; each round starts a
// Gatekeeper process afresh.
type gatekeeperEnv struct {
	bin, dir   string
	kubeconfig string
	te         *envtest.Environment
	// peer describes what runs, for the report.
	peer GatekeeperPeer
	// starts counts the processes started, to name their logs.
	starts int
}

// startGatekeeperEnv starts the control plane for the Gatekeeper executable
// bin, with the CRDs of manifest (Gatekeeper's deploy/gatekeeper.yaml; ""
// finds it in the module cache, for the version bin was built from).
func startGatekeeperEnv(ctx context.Context, bin, manifest string, namespaceCount int, log io.Writer) (_ *gatekeeperEnv, err error) {
	version, err := gatekeeperVersion(bin)
	if err != nil {
		return nil, err
	}
	if manifest == "" {
		if manifest, err = gatekeeperManifest(ctx, version); err != nil {
			return nil, err
		}
	}
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return nil, fmt.Errorf("reading Gatekeeper's manifest: %w", err)
	}
	crds, err := customResourceDefinitions(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, fmt.Errorf("the %s target runs on a local control plane: %w (build one with hack/control-plane.sh and set %s to the directory it prints)",
			TargetGatekeeper, err, testenv.AssetsEnv)
	}
	dir, err := os.MkdirTemp("", "pipeguard-loadtest-gatekeeper-")
	if err != nil {
		return nil, err
	}
	e := &gatekeeperEnv{bin: bin, dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"),
		peer: GatekeeperPeer{Version: version, Rego: gatekeeperRego, Kinds: constraintKinds()}}
	fmt.Fprintf(log, "gatekeeper %s: starting kube-apiserver and etcd with its %d CRDs\n", version, len(crds))
	e.te = &envtest.Environment{UseExistingCluster: ptr.To(false), BinaryAssetsDirectory: assets, CRDs: crds}
	e.te.ControlPlane.APIServer = &envtest.APIServer{Path: filepath.Join(assets, "kube-apiserver")}
	e.te.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	e.te.ControlPlane.KubectlPath = filepath.Join(assets, "kubectl")
	cfg, err := e.te.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err), e.stop())
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
		}
	}()
	if err := os.WriteFile(e.kubeconfig, e.te.KubeConfig, 0o600); err != nil {
		return nil, err
	}
	c, err := crclient.New(cfg, crclient.Options{})
	if err != nil {
		return nil, err
	}
	// The namespaces of the mix, labelled as pipeguard's lookup has them,
	// and Gatekeeper's own.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatekeeperNamespace}}); err != nil {
		return nil, err
	}
	for name, labels := range namespaces(namespaceCount) {
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
func (e *gatekeeperEnv) stop() error {
	var err error
	if e.te != nil {
		err = e.te.Stop()
	}
	return errors.Join(err, os.RemoveAll(e.dir))
}

// gatekeeperVersion checks that bin is a Go executable built from
// Gatekeeper's module and returns the module's version.
func gatekeeperVersion(bin string) (string, error) {
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the %s target runs Gatekeeper's executable %s, which does not exist: build it with `make bench-gatekeeper` (or pass --gatekeeper), or leave %s out of --targets",
			TargetGatekeeper, bin, TargetGatekeeper)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("--gatekeeper %s: not a Go executable: %w", bin, err)
	}
	if info.Main.Path == gatekeeperModule {
		return info.Main.Version, nil
	}
	for _, d := range info.Deps {
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
		return "", fmt.Errorf("finding Gatekeeper %s's manifest with go mod download (or pass --gatekeeper-manifest): %w: %s", version, err, strings.TrimSpace(stderr.String()))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no module directory (%v %s)", gatekeeperModule, version, err, m.Error)
	}
	return filepath.Join(m.Dir, "deploy", "gatekeeper.yaml"), nil
}

// customResourceDefinitions returns the CustomResourceDefinitions among the
// YAML documents of manifest, which must hold at least one.
func customResourceDefinitions(manifest []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("document %d: CustomResourceDefinition of %s, want %s", i, tm.APIVersion, apiextensionsv1.SchemeGroupVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, errors.New("no CustomResourceDefinition in the manifest")
	}
	return out, nil
}

// generate runs Gatekeeper's generate operation, which its audit pod runs
// in a cluster (here beside the webhook operation, which starts the
// template controller without auditing anything), until it has made the
// Constraint's CRD from the ConstraintTemplate, then creates the Constraint
// and stops it. The webhook processes measured afterwards find both.
func (e *gatekeeperEnv) generate(ctx context.Context) error {
	p, err := e.launch("webhook", "generate")
	if err != nil {
		return err
	}
	if err := e.createConstraint(ctx, p); err != nil {
		_ = p.stop()
		return err
	}
	return p.stop()
}

// start starts a Gatekeeper webhook process. It returns once the process
// runs; awaitDecisions waits until it decides correctly.
func (e *gatekeeperEnv) start() (*gatekeeperProc, error) {
	return e.launch(gatekeeperOperations...)
}

// gatekeeperOperations is what the measured processes run: the webhook
// alone, as the webhook pods of Gatekeeper's deployment do (without its
// mutation webhook, which the rule does not use).
var gatekeeperOperations = []string{"webhook"}

// launch starts Gatekeeper for operations.
func (e *gatekeeperEnv) launch(operations ...string) (*gatekeeperProc, error) {
	e.starts++
	certDir, err := os.MkdirTemp(e.dir, "certs-")
	if err != nil {
		return nil, err
	}
	caPEM, err := writeCert(certDir)
	if err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	args := gatekeeperArgs(operations, ports[0], ports[1], ports[2], certDir)
	if slices.Equal(operations, gatekeeperOperations) {
		e.peer.Args = append([]string(nil), args...)
		for i, a := range e.peer.Args {
			// The ports and the directory change from run to run.
			if k, _, ok := strings.Cut(a, "="); ok && (k == "--port" || k == "--cert-dir" || k == "--health-addr" || k == "--prometheus-port") {
				e.peer.Args[i] = k + "=…"
			}
		}
	}
	p := &gatekeeperProc{url: fmt.Sprintf("https://127.0.0.1:%d/v1/admit", ports[0]), caPEM: caPEM, certDir: certDir,
		logPath: filepath.Join(e.dir, fmt.Sprintf("gatekeeper-%d-%s.log", e.starts, strings.Join(operations, "-"))), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(e.bin, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "POD_NAMESPACE="+gatekeeperNamespace)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", e.bin, err)
	}
	p.pid = strconv.Itoa(p.cmd.Process.Pid)
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// createConstraint creates the Constraint as soon as its kind exists: the
// CRD that Gatekeeper's generate operation makes from the
// ConstraintTemplate.
func (e *gatekeeperEnv) createConstraint(ctx context.Context, p *gatekeeperProc) error {
	err := p.retry(ctx, func() error {
		// A fresh client each time: the kind is new to its RESTMapper.
		c, err := crclient.New(e.te.Config, crclient.Options{})
		if err == nil {
			if err = c.Create(ctx, gatekeeperConstraint()); apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		return err
	})
	if errors.Is(err, errGatekeeperTimeout) {
		return fmt.Errorf("gatekeeper made no CRD of kind %s from the ConstraintTemplate within %v (%w); its log: %s",
			gatekeeperConstraintKind, gatekeeperStartTimeout, err, p.logTail())
	}
	return err
}

// awaitDecisions waits until Gatekeeper decides every kind of review of the
// mix as pipeguard does, sending each kind in turn: the denied kinds are
// denied once the constraint is in force, and a rule that decides any kind
// otherwise is reported rather than measured.
func (p *gatekeeperProc) awaitDecisions(ctx context.Context, c *client, m *mix) error {
	err := p.retry(ctx, func() error { return decideEveryKind(ctx, c, m) })
	if errors.Is(err, errGatekeeperTimeout) {
		return fmt.Errorf("gatekeeper did not decide the mix as pipeguard does within %v, so it is not measured: %w; its log: %s",
			gatekeeperStartTimeout, err, p.logTail())
	}
	return err
}

// decideEveryKind sends one request of each slot of the mix and returns the
// first wrong answer.
func decideEveryKind(ctx context.Context, c *client, m *mix) error {
	for range m.slots {
		if o := c.send(ctx); o.err != nil {
			return fmt.Errorf("%s: %w", o.kind.name, o.err)
		}
	}
	return nil
}

// runGatekeeper is Run for the gatekeeper target: a Gatekeeper process of
// its own on env's control plane, checked to decide the mix as pipeguard
// does, then measured as the other targets are.
func runGatekeeper(ctx context.Context, env *gatekeeperEnv, opts Options, t *target, m *mix) (*Result, error) {
	if env == nil {
		return nil, fmt.Errorf("the %s target needs its control plane, which was not started", TargetGatekeeper)
	}
	p, err := env.start()
	if err != nil {
		return nil, err
	}
	c, err := newClient(p.url, p.caPEM, m, t.namespaces, opts.Workers, rand.Uint32())
	if err != nil {
		return nil, errors.Join(err, p.stop())
	}
	defer c.close()
	if err := p.awaitDecisions(ctx, c, m); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	res, err := drive(ctx, c, p, opts, t)
	if stopErr := p.stop(); err == nil && stopErr != nil {
		err = fmt.Errorf("stopping gatekeeper: %w", stopErr)
	}
	return res, err
}
