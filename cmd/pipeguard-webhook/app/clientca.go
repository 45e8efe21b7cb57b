package app

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// caBundle is a PEM file of CA certificates, read again when its size or
// modification time changes. A change that cannot be read or parsed keeps
// the bundle in force, and is logged: a half-written file never opens the
// server to everyone, nor closes it to the API server.
type caBundle struct {
	path string
	log  logr.Logger
	now  func() time.Time

	mu      sync.Mutex
	modTime time.Time
	size    int64
	current *x509.CertPool
	// checked is when the file was last looked at: at most once a second,
	// whatever the rate of handshakes.
	checked time.Time
}

// CheckClientCAFile reports whether path can serve as Options.ClientCAFile:
// a readable PEM file with at least one certificate.
func CheckClientCAFile(path string) error {
	_, err := loadCABundle(path, logr.Discard())
	return err
}

// loadCABundle reads the bundle at path; it must hold a certificate.
func loadCABundle(path string, log logr.Logger) (*caBundle, error) {
	b := &caBundle{path: path, log: log, now: time.Now}
	if err := b.reload(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *caBundle) reload() error {
	fi, err := os.Stat(b.path)
	if err != nil {
		return fmt.Errorf("client CA bundle: %w; give the file of the CA that signs the API server's webhook client certificate", err)
	}
	if fi.ModTime().Equal(b.modTime) && fi.Size() == b.size && b.current != nil {
		return nil
	}
	pemBytes, err := os.ReadFile(b.path)
	if err != nil {
		return fmt.Errorf("client CA bundle: %w; give the file of the CA that signs the API server's webhook client certificate", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) || !bytes.Contains(pemBytes, []byte("-----BEGIN CERTIFICATE-----")) {
		return fmt.Errorf("client CA bundle %s holds no PEM certificate; give the PEM file of the CA that signs the API server's webhook client certificate", b.path)
	}
	b.current, b.modTime, b.size = pool, fi.ModTime(), fi.Size()
	return nil
}

// pool returns the CAs in force, reading the file again when it changed.
func (b *caBundle) pool() *x509.CertPool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := b.now(); now.Sub(b.checked) >= time.Second {
		b.checked = now
		if err := b.reload(); err != nil {
			b.log.Error(err, "keeping the client CA bundle read before")
		}
	}
	return b.current
}
