// Package badreceiver serves audit webhook receivers that misbehave, on
// real sockets, and captures the JSON log lines of the agent that sends to
// them: the tests of pipeguard-agent's webhook backend and of the agent
// that runs it share them.
package badreceiver

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Silent accepts connections, reads what is sent and never answers; it
// returns its URL. The connections close when the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// Refusing is the URL of a port nothing listens on: connections are
// refused.
func Refusing(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// Broken answers every request 500 "receiver broken"; it returns its URL.
func Broken(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "receiver broken", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// All names each misbehaving receiver.
var All = map[string]func(testing.TB) string{
	"accepts and never answers": Silent,
	"refuses connections":       Refusing,
	"answers 500":               Broken,
}

// Log captures log lines as JSON objects. It is safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	lines []map[string]any
}

// Logger returns a logger writing to l.
func (l *Log) Logger() logr.Logger {
	return funcr.NewJSON(func(obj string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			panic(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, m)
	}, funcr.Options{})
}

// With returns the lines whose message is msg.
func (l *Log) With(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines {
		if line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// Lines returns every line captured so far.
func (l *Log) Lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]any(nil), l.lines...)
}
