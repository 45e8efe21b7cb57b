package app

import (
	"fmt"
	"net"
	"os"
	"testing"
)

// openFiles is how many file descriptors the test process holds.
func openFiles(t *testing.T) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// TestPortFloodFileDescriptors opens many idle kept-alive connections to
// the probe port, with the agent's own bounds, and counts the file
// descriptors of the process: the agent holds at most its cap of them,
// however many the clients open; the others wait in the kernel's backlog.
func TestPortFloodFileDescriptors(t *testing.T) {
	const n = 500
	r := start(t, Options{HealthProbeAddr: "127.0.0.1:0"})
	addr := r.agent.HealthProbeAddress()
	before := openFiles(t)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitOpen(t, r.agent.probes.listener, "at least the cap", func(open int) bool { return open >= probeMaxConnections })
	// The test's own n client ends are in the count; the agent's ends are
	// the rest.
	if agentSide := openFiles(t) - before - n; agentSide > probeMaxConnections {
		t.Fatalf("the agent holds %d file descriptors for %d idle connections, over the probe port's cap of %d", agentSide, n, probeMaxConnections)
	}
}
