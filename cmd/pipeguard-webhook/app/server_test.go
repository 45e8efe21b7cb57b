package app

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/pipeguard/pipeguard/webhook"
)

// testCA is a certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate of the CA's for cn, a server certificate
// for 127.0.0.1 when server is set, else a client certificate.
func (ca *testCA) issue(t *testing.T, cn string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir string, c tls.Certificate) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: c.Certificate[0]},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// testServer is a running webhook server whose reviews are answered by a
// recorder behind webhook.Bound, as pipeguard-webhook serves them.
type testServer struct {
	addr     string
	serverCA *testCA
	srv      *server
	mu       sync.Mutex
	peers    []webhook.Peer
	reviews  int
}

func startServer(t *testing.T, opts ServerOptions) *testServer {
	t.Helper()
	ts := &testServer{serverCA: newTestCA(t, "serving CA")}
	opts.CertDir = t.TempDir()
	writePEM(t, opts.CertDir, ts.serverCA.issue(t, "pipeguard-webhook", true))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts.Logger = testr.New(t)
	srv, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv, ts.addr = srv, l.Addr().String()
	srv.Register("/validate", webhook.Bound(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		p, _ := webhook.PeerFrom(r.Context())
		ts.mu.Lock()
		ts.peers = append(ts.peers, p)
		ts.reviews++
		ts.mu.Unlock()
		_, _ = io.WriteString(w, `{"response":{"uid":"u","allowed":true}}`)
	}), webhook.ServeOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	// The server reports started once it listens, so connections queue
	// from then on.
	for deadline := time.Now().Add(time.Minute); srv.StartedChecker()(nil) != nil; {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the server stopped before it listened: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not listen within a minute")
		}
		time.Sleep(10 * time.Millisecond) // a poll under the deadline above; the pause only spares the CPU
	}
	return ts
}

// client returns an HTTPS client that trusts the server and presents
// cert, if any, on connections of its own.
func (ts *testServer) client(cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ts.serverCA.pem)
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// review posts a review and returns the HTTP status, or the error of a
// connection that got no answer.
func (ts *testServer) review(c *http.Client) (int, error) {
	resp, err := c.Post("https://"+ts.addr+"/validate?timeout=5s", "application/json", strings.NewReader(`{"request":{"uid":"u"}}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func (ts *testServer) tlsDial(t *testing.T) *tls.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ts.serverCA.pem)
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reports whether the server closes c within d (the test's
// guard, far beyond the timeouts under test): a read returns EOF or a
// reset, after whatever answer the server wrote.
func closedWithin(c net.Conn, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after %s", d)
	}
	return nil
}

// TestSlowAndIdleConnectionsClosed: connections that hold the port
// without sending a review are closed by the server's timeouts: a body
// that never ends (ReadTimeout), headers that never end
// (ReadHeaderTimeout), a TLS handshake that never starts, and a
// kept-alive connection that sends nothing more (IdleTimeout). None of
// them reaches a review.
func TestSlowAndIdleConnectionsClosed(t *testing.T) {
	ts := startServer(t, ServerOptions{
		ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, MaxConnections: 1000,
	})
	const each = 50
	var conns []net.Conn
	for range each { // slow bodies
		c := ts.tlsDial(t)
		fmt.Fprintf(c, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"request\":")
		conns = append(conns, c)
	}
	for range each { // slow headers
		c := ts.tlsDial(t)
		fmt.Fprintf(c, "POST /validate HTTP/1.1\r\nHost: x\r\n")
		conns = append(conns, c)
	}
	for range each { // no handshake
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for range each { // idle after a review
		c := ts.tlsDial(t)
		fmt.Fprintf(c, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		if err := closedWithin(c, 20*time.Second); err != nil {
			t.Errorf("connection %d (%s): %v", i, []string{"slow body", "slow headers", "no handshake", "idle"}[i/each], err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.reviews != each {
		t.Errorf("%d reviews served, want the %d complete ones only", ts.reviews, each)
	}
}

// TestConnectionCap: with MaxConnections open, the next connection is not
// served until one of them closes.
func TestConnectionCap(t *testing.T) {
	ts := startServer(t, ServerOptions{MaxConnections: 2})
	var held []net.Conn
	for range 2 {
		held = append(held, ts.tlsDial(t))
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ts.serverCA.pem)
	raw, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	third := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	handshake := make(chan error, 1)
	go func() { handshake <- third.Handshake() }()
	select {
	case err := <-handshake:
		t.Fatalf("a third connection was served while two were open (handshake: %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	if err := <-handshake; err != nil {
		t.Fatalf("the third connection, once one closed: %v", err)
	}
	third.Close()
	held[1].Close()
}

// TestClientCertificates: with ClientCAFile set, a connection without a
// client certificate, or with one of another CA, gets no answer at all and
// reaches no review; one with a certificate of the CA is answered, and
// its review names the certificate's subject. A new bundle in the file
// takes effect without a restart.
func TestClientCertificates(t *testing.T) {
	apiServerCA, otherCA := newTestCA(t, "API server client CA"), newTestCA(t, "another CA")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, apiServerCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, ServerOptions{ClientCAFile: caFile})
	now := time.Now()
	ts.srv.clientCAs.now = func() time.Time { return now }
	apiServer := apiServerCA.issue(t, "kube-apiserver-webhook-client", false)
	forged := otherCA.issue(t, "kube-apiserver-webhook-client", false)

	for name, tc := range map[string]struct {
		cert     *tls.Certificate
		answered bool
	}{
		"no certificate":              {nil, false},
		"a certificate of another CA": {&forged, false},
		"the API server's":            {&apiServer, true},
	} {
		t.Run(name, func(t *testing.T) {
			code, err := ts.review(ts.client(tc.cert))
			switch {
			case tc.answered && (err != nil || code != http.StatusOK):
				t.Fatalf("review: HTTP %d, %v; want an answer", code, err)
			case !tc.answered && err == nil:
				t.Fatalf("review: HTTP %d; want no answer at all", code)
			}
		})
	}
	ts.mu.Lock()
	if len(ts.peers) != 1 || ts.peers[0].Subject != "CN=kube-apiserver-webhook-client" || !strings.HasPrefix(ts.peers[0].Addr, "127.0.0.1:") {
		t.Errorf("peers of the reviews served: %+v; want one, the API server's certificate from 127.0.0.1", ts.peers)
	}
	ts.mu.Unlock()

	// The bundle now trusts the other CA only; a garbled write after it
	// keeps it in force.
	if err := os.WriteFile(caFile, otherCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if _, err := ts.review(ts.client(&apiServer)); err == nil {
		t.Error("the API server's old CA still answered after the bundle changed")
	}
	if code, err := ts.review(ts.client(&forged)); err != nil || code != http.StatusOK {
		t.Errorf("a certificate of the new bundle: HTTP %d, %v; want an answer", code, err)
	}
	if err := os.WriteFile(caFile, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if code, err := ts.review(ts.client(&forged)); err != nil || code != http.StatusOK {
		t.Errorf("after a garbled write of the bundle: HTTP %d, %v; want the bundle before it in force", code, err)
	}
	if _, err := ts.review(ts.client(nil)); err == nil {
		t.Error("after a garbled write of the bundle, a client without a certificate was answered")
	}
}
