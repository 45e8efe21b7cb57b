package install_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// repoRoot is the module root, seen from this package.
const repoRoot = "../.."

// kubectl runs the kubectl that hack/control-plane.sh built, never one
// that happens to be on the machine.
type kubectl struct {
	bin, kubeconfig string
}

// startCluster starts kube-apiserver and etcd and returns the control
// plane's kubectl with a kubeconfig file for them.
func startCluster(t *testing.T) kubectl {
	t.Helper()
	env := testenv.Start(t, testenv.Options{})
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.KubeconfigFile(t)
	return kubectl{bin: filepath.Join(assets, "kubectl"), kubeconfig: kubeconfig}
}

// run returns kubectl's combined output, and an error that includes it.
func (k kubectl) run(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// must runs kubectl and fails the test when it fails.
func (k kubectl) must(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := k.run(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// render builds a kustomization under config/ as kubectl apply -k would.
func (k kubectl) render(t *testing.T, dir string) []byte {
	t.Helper()
	return []byte(k.must(t, nil, "kustomize", filepath.Join("config", dir)))
}

// objects decodes a multi-document YAML stream.
func objects(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decoding rendered manifests: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// find returns the one object of that kind and name, or fails the test.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("rendered manifests have no %s %s", kind, name)
	return nil
}

// field reads a nested field, failing the test when it is missing.
func field(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !ok {
		t.Fatalf("field %s missing (%v)", strings.Join(path, "."), err)
	}
	return v
}

// webhookProcess is pipeguard-webhook running as its own process, as it
// runs outside the cluster with config/local.
type webhookProcess struct {
	cmd      *exec.Cmd
	log      string
	probeURL string
	done     chan error
}

// buildWebhook compiles cmd/pipeguard-webhook into a temporary directory.
func buildWebhook(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pipeguard-webhook")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pipeguard-webhook")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building pipeguard-webhook: %v\n%s", err, out)
	}
	return bin
}

// startWebhook runs bin with args plus a probe address, and stops it when
// the test ends.
func startWebhook(t *testing.T, bin string, args ...string) *webhookProcess {
	t.Helper()
	probe := freePort(t)
	logPath := filepath.Join(t.TempDir(), "webhook.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe), "--metrics-bind-address", "0", "--drain-delay", "0s")
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pipeguard-webhook: %v", err)
	}
	p := &webhookProcess{cmd: cmd, log: logPath, probeURL: fmt.Sprintf("http://127.0.0.1:%d", probe), done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("pipeguard-webhook: %v", err)
		}
		if t.Failed() {
			p.dumpLog(t)
		}
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *webhookProcess) stop() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			return fmt.Errorf("exited with %v after SIGTERM", err)
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		return errors.New("still running 20s after SIGTERM; killed")
	}
}

// readiness returns the status code and body of GET path on the probe port.
func (p *webhookProcess) readiness(path string) (int, string) {
	resp, err := http.Get(p.probeURL + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady waits until /readyz answers 200.
func (p *webhookProcess) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, "pipeguard-webhook /readyz answers 200", func() bool {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("pipeguard-webhook exited: %v", err)
		default:
		}
		code, _ := p.readiness("/readyz")
		return code == http.StatusOK
	})
}

func (p *webhookProcess) dumpLog(t *testing.T) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("last lines of the pipeguard-webhook log:\n%s", strings.Join(lines, "\n"))
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		// Poll under the deadline above; the pause only spares the CPU.
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// listening reports whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// localCert writes tls.crt and tls.key for 127.0.0.1 into dir, as someone
// running pipeguard-webhook outside the cluster provides them, and returns
// the PEM of the CA that signed them.
func localCert(t *testing.T, dir string) []byte {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pipeguard local CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tls.crt", "CERTIFICATE", der)
	write("tls.key", "EC PRIVATE KEY", keyDER)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// syncBuffer is a bytes.Buffer that a command writes while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
