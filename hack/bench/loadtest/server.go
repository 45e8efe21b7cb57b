package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
	"github.com/pipeguard/pipeguard/hack/bench/internal/childproc"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// target is a webhook the load runs against.
type target struct {
	name string
	// namespaces is how many namespaces the lookup holds; policies how
	// many PipeAccessPolicies pipeguard loads (0: the built-in default).
	namespaces, policies int
	// cacheSize is the decision cache's size; allowAll serves the floor.
	cacheSize int
	allowAll  bool
	// peer says the target is another project's webhook, run as its own
	// executable rather than served by the serve subcommand, with GOGC
	// gogc ("": Go's default, as its deployment runs it).
	peer bool
	gogc string
	// deployedOnly keeps the target to the deployed mix.
	deployedOnly bool
}

// The targets.
const (
	// TargetFloor allows every review without reading it: what any
	// webhook served the same way costs at the least.
	TargetFloor = "floor"
	// TargetPipeguard is pipeguard as pipeguard-webhook runs it, with its
	// decision cache.
	TargetPipeguard = "pipeguard"
	// TargetScale is pipeguard with 10,000 namespaces in its lookup and
	// 50 PipeAccessPolicies.
	TargetScale = "pipeguard-scale"
	// TargetGatekeeper is OPA Gatekeeper's validating webhook deciding
	// pipeguard's default rule as a ConstraintTemplate (gatekeeperRego),
	// run as in a cluster: its own executable, webhook operation only, on
	// a local kube-apiserver (gatekeeperEnv).
	TargetGatekeeper = "gatekeeper"
	// TargetGatekeeperGOGC is the same run with pipeguard-webhook's GOGC.
	TargetGatekeeperGOGC = "gatekeeper-gogc" + serverGOGC
)

var targets = []*target{
	{name: TargetFloor, namespaces: smallNamespaces, allowAll: true},
	{name: TargetPipeguard, namespaces: smallNamespaces, cacheSize: app.DefaultDecisionCacheSize},
	{name: TargetScale, namespaces: 10000, policies: 50, cacheSize: app.DefaultDecisionCacheSize, deployedOnly: true},
	{name: TargetGatekeeper, namespaces: smallNamespaces, peer: true},
	{name: TargetGatekeeperGOGC, namespaces: smallNamespaces, peer: true, gogc: serverGOGC},
}

// allTargets names the targets, in the order a round runs them.
var allTargets = []string{TargetFloor, TargetPipeguard, TargetScale, TargetGatekeeper, TargetGatekeeperGOGC}

// smallNamespaces is the namespace count of every target but the scale one.
const smallNamespaces = 20

func targetOf(name string) *target {
	i := slices.IndexFunc(targets, func(t *target) bool { return t.name == name })
	if i < 0 {
		return nil
	}
	return targets[i]
}

// serveCommand is the hidden subcommand that serves one target in a
// process of its own, so that the load generator stays out of the RSS and
// CPU time measured; serverGOGC is its GOGC, as config/manager sets for
// pipeguard-webhook (TestServerGOGCMatchesTheDeployment).
const serveCommand, serverGOGC = "serve", "400"

// serving is where a server process listens, the JSON line it prints.
type serving struct {
	URL   string `json:"url"`
	CAPEM []byte `json:"caPEM"`
}

// serveMain runs a server process: it serves the target on a free
// loopback port, prints where (a serving line) and serves until stdin is
// closed (childproc).
func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadtest "+serveCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("target", TargetPipeguard, "the target to serve")
	err := fs.Parse(args)
	t := targetOf(*name)
	switch {
	case err == nil && fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case err == nil && (t == nil || t.peer):
		err = fmt.Errorf("--target %q is unknown or not served here", *name)
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve:", err)
		return 2
	}
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h, err := newHandler(ctx, t)
	var srv *server
	if err == nil {
		srv, err = startServer(ctx, h)
	}
	if err == nil {
		if err = childproc.Serving(serving{URL: srv.url, CAPEM: srv.caPEM}, stdin, stdout, stop); err == nil {
			<-ctx.Done()
		}
		if stopErr := srv.stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping: %w", stopErr))
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadtest serve:", err)
		return 1
	}
	return 0
}

// child is a server process started by startChild.
type child struct {
	*childproc.Process
	serving
}

// startChild starts a server process for target, allowing a minute to
// compile its policies and start listening.
func startChild(ctx context.Context, target string) (*child, error) {
	c := &child{}
	p, err := childproc.Start(ctx, "server process", []string{serveCommand, "--target", target}, []string{"GOGC=" + serverGOGC},
		time.Minute, &c.serving, func() bool { return c.URL != "" })
	if err != nil {
		return nil, err
	}
	c.Process = p
	return c, nil
}

// server is a running controller-runtime webhook server on loopback.
type server struct {
	url, dir string
	caPEM    []byte
	cancel   context.CancelFunc
	done     chan error
}

// newHandler builds the admission handler of a target, with the same
// metrics observer pipeguard-webhook uses, on a private registry.
func newHandler(ctx context.Context, t *target) (admission.Handler, error) {
	if t.allowAll {
		return admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }), nil
	}
	metrics, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	engine, err := policy.NewEngine(ctx, policy.Options{DecisionCacheSize: t.cacheSize})
	if err != nil {
		return nil, err
	}
	if t.policies > 0 {
		if _, err := engine.Load(ctx, accessPolicies(t.policies)); err != nil {
			return nil, fmt.Errorf("loading %d policies: %w", t.policies, err)
		}
	}
	ns := namespaces(t.namespaces)
	// The namespace the e2e subcommand creates for pipeguard, labelled
	// there as here.
	ns["e2e-"+TargetPipeguard] = map[string]string{"kubernetes.io/metadata.name": "e2e-" + TargetPipeguard, policy.AllowLabel: "true"}
	return webhook.NewHandler(webhook.Options{Engine: engine, Namespaces: ns, Observer: metrics}), nil
}

// startServer serves h at app.Path exactly as pipeguard-webhook does:
// its webhook server with TLS from a certificate directory and its bounds,
// and an admission.Webhook that recovers panics. It listens on a free
// loopback port with a fresh self-signed certificate.
func startServer(ctx context.Context, h admission.Handler) (*server, error) {
	dir, err := os.MkdirTemp("", "pipeguard-loadtest-")
	var caPEM []byte
	if err == nil {
		caPEM, err = writeCert(dir)
	}
	// The port is found free, released, then bound by the server: another
	// process may take it in between, so binding is retried.
	for attempt := 1; caPEM != nil && attempt <= 5; attempt++ {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		var ws ctrlwebhook.Server
		ws, err = app.NewServer(app.ServerOptions{
			Host: "127.0.0.1", Port: port, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key",
		})
		if err != nil {
			break
		}
		ws.Register(app.Path, webhook.Bound(&admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)}, webhook.ServeOptions{}))
		sctx, cancel := context.WithCancel(ctx)
		s := &server{url: fmt.Sprintf("https://127.0.0.1:%d%s", port, app.Path), caPEM: caPEM, dir: dir, cancel: cancel, done: make(chan error, 1)}
		go func() { s.done <- ws.Start(sctx) }()
		// Up to 10s until it has started, unless it ends first.
		for deadline := time.Now().Add(10 * time.Second); err == nil && ws.StartedChecker()(nil) != nil; {
			select {
			case err = <-s.done:
				err = cmp.Or(err, errors.New("webhook server stopped while starting"))
			case <-time.After(5 * time.Millisecond):
				if time.Now().After(deadline) {
					err = errors.New("webhook server did not start within 10s")
				}
			}
		}
		if err == nil {
			return s, nil
		}
		cancel()
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("starting the webhook server: %w", err)
}

// stop shuts the server down and removes its certificate.
func (s *server) stop() error {
	s.cancel()
	err := <-s.done
	os.RemoveAll(s.dir)
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeCert writes a self-signed certificate for 127.0.0.1 and localhost
// to dir/tls.crt and dir/tls.key and returns its PEM, or nil and an error.
func writeCert(dir string) ([]byte, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err == nil {
		err = errors.Join(os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600), os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
	}
	if err != nil {
		return nil, err
	}
	return certPEM, nil
}

// namespaces returns n namespaces ns-00000… with the labels a cluster
// usually sets. Every tenth carries pipeguard's allowance label, and some
// carry labels that generated policies select on.
func namespaces(n int) webhook.StaticNamespaces {
	out := make(webhook.StaticNamespaces, n)
	for i := range n {
		name := fmt.Sprintf(nsFormat, i)
		labels := map[string]string{
			"kubernetes.io/metadata.name": name,
			"team":                        fmt.Sprintf("team-%d", i%97),
			"pipeguard.io/environment":    []string{"prod", "staging", "dev"}[i%3],
		}
		if i%10 == 0 {
			labels[policy.AllowLabel] = "true"
		}
		if i%7 == 0 {
			labels[fmt.Sprintf("vendor-%d.agents.pipeguard.io/enabled", i%5)] = "true"
		}
		out[name] = labels
	}
	return out
}

// accessPolicies returns n PipeAccessPolicies: the default policy, then
// policies for vendor agent pipes, a few selecting namespaces, one warning,
// one a dryrun and two also protecting CSI Proxy pipes. None changes a
// decision of the request mix.
func accessPolicies(n int) []v1alpha1.PipeAccessPolicy {
	csiProxy := policy.DefaultPolicy()
	csiProxy.Name = "csi-proxy"
	out := []v1alpha1.PipeAccessPolicy{csiProxy}
	for i := 1; i < n; i++ {
		p := v1alpha1.PipeAccessPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vendor-%03d", i)},
			Spec: v1alpha1.PipeAccessPolicySpec{
				Pipes:             []string{fmt.Sprintf("vendor%03d-agent-*", i), fmt.Sprintf("vendor%03d-control", i)},
				EnforcementAction: v1alpha1.Deny,
			},
		}
		switch i {
		case 1, 2:
			p.Spec.Pipes = append(p.Spec.Pipes, []string{"csi-proxy-disk-*", "csi-proxy-smb-v1"}[i-1])
		case 3:
			p.Spec.EnforcementAction = v1alpha1.Warn
		case 4:
			p.Spec.EnforcementAction = v1alpha1.DryRun
		}
		switch {
		case i%10 == 1:
			p.Spec.Allow.NamespaceSelector = &metav1.LabelSelector{
				MatchLabels: map[string]string{fmt.Sprintf("vendor-%d.agents.pipeguard.io/enabled", i%5): "true"},
			}
		case i%10 == 5:
			p.Spec.Allow.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pipeguard.io/environment", Operator: metav1.LabelSelectorOpIn, Values: []string{"staging", "dev"}},
			}}
		case i%10 == 7:
			p.Spec.Allow.Namespaces = []string{fmt.Sprintf(nsFormat, i)}
		}
		out = append(out, p)
	}
	return out
}
