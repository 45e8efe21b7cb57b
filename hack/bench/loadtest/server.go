package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/pipeguard/pipeguard/cmd/pipeguard-webhook/app"
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
	// executable rather than served by the serve subcommand.
	peer bool
}

// The targets.
const (
	// TargetFloor allows every review without reading it: what any
	// webhook served the same way costs at the least.
	TargetFloor = "floor"
	// TargetPipeguard is pipeguard as pipeguard-webhook runs it, with its
	// decision cache.
	TargetPipeguard = "pipeguard"
	// TargetUncached is pipeguard with the decision cache off: rego
	// decides every review that has a pipe mount.
	TargetUncached = "pipeguard-uncached"
	// TargetScale is pipeguard with 10,000 namespaces in its lookup and
	// 50 PipeAccessPolicies.
	TargetScale = "pipeguard-scale"
)

var targets = []*target{
	{name: TargetFloor, namespaces: smallNamespaces, allowAll: true},
	{name: TargetPipeguard, namespaces: smallNamespaces, cacheSize: app.DefaultDecisionCacheSize},
	{name: TargetUncached, namespaces: smallNamespaces},
	{name: TargetScale, namespaces: 10000, policies: 50, cacheSize: app.DefaultDecisionCacheSize},
	{name: TargetGatekeeper, namespaces: smallNamespaces, peer: true},
}

// allTargets names the targets, in the order a round runs them. The
// gatekeeper target needs Gatekeeper's executable (make bench-gatekeeper)
// and a control plane (KUBEBUILDER_ASSETS).
var allTargets = func() (out []string) {
	for _, t := range targets {
		out = append(out, t.name)
	}
	return out
}()

// smallNamespaces is the namespace count of every target but the scale one.
const smallNamespaces = 20

// servedTargets names the targets the serve subcommand serves: all but the
// peers.
func servedTargets() (out []string) {
	for _, t := range targets {
		if !t.peer {
			out = append(out, t.name)
		}
	}
	return out
}

func targetOf(name string) *target {
	for _, t := range targets {
		if t.name == name {
			return t
		}
	}
	return nil
}

// server is a running controller-runtime webhook server on loopback.
type server struct {
	url    string
	caPEM  []byte
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// newHandler builds the admission handler of a target, with the same
// metrics observer pipeguard-webhook uses, on a private registry.
func newHandler(ctx context.Context, t *target) (admission.Handler, error) {
	if t.peer {
		return nil, fmt.Errorf("target %q is another project's webhook, not served here", t.name)
	}
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

// startServer serves h at app.Path exactly as pipeguard-webhook does: a
// controller-runtime webhook server with TLS from a certificate directory
// and an admission.Webhook that recovers panics. It listens on a free
// loopback port with a fresh self-signed certificate.
func startServer(ctx context.Context, h admission.Handler) (*server, error) {
	dir, err := os.MkdirTemp("", "pipeguard-loadtest-")
	if err != nil {
		return nil, err
	}
	caPEM, err := writeCert(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The port is found free, released, then bound by the server: another
	// process may take it in between, so binding is retried.
	for attempt := 0; ; attempt++ {
		s, err := listen(ctx, h, dir)
		if err == nil {
			s.caPEM = caPEM
			return s, nil
		}
		if attempt == 4 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

func listen(ctx context.Context, h admission.Handler, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ws := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: "127.0.0.1", Port: port, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key",
	})
	ws.Register(app.Path, &admission.Webhook{Handler: h, RecoverPanic: ptr.To(true)})
	sctx, cancel := context.WithCancel(ctx)
	s := &server{url: fmt.Sprintf("https://127.0.0.1:%d%s", port, app.Path), dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- ws.Start(sctx) }()
	started := ws.StartedChecker()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-s.done:
			cancel()
			if err == nil {
				err = errors.New("webhook server stopped while starting")
			}
			return nil, err
		case <-time.After(5 * time.Millisecond):
		}
		if started(nil) == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("webhook server on port %d did not start within 10s", port)
		}
	}
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

// writeCert writes a self-signed ECDSA P-256 certificate for 127.0.0.1 to
// dir/tls.crt and dir/tls.key and returns the certificate PEM.
func writeCert(dir string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "pipeguard-loadtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return certPEM, nil
}
