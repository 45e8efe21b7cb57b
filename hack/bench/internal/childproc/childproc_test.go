package childproc

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// The test binary is the child: run with CHILDPROC_TEST set, it acts as
// that variable says instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("CHILDPROC_TEST") {
	case "serve":
		fmt.Printf(`{"address": %q}`+"\n", os.Getenv("CHILDPROC_ADDRESS"))
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "fail":
		fmt.Fprintln(os.Stderr, "cannot listen: address in use")
		os.Exit(1)
	case "silent":
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type ready struct {
	Address string `json:"address"`
}

func start(t *testing.T, mode string, timeout time.Duration) (*Process, *ready, error) {
	t.Helper()
	var r ready
	p, err := Start(context.Background(), "test server", nil,
		[]string{"CHILDPROC_TEST=" + mode, "CHILDPROC_ADDRESS=127.0.0.1:1234"}, timeout, &r, func() bool { return r.Address != "" })
	return p, &r, err
}

func TestStartAndStop(t *testing.T) {
	p, r, err := start(t, "serve", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Address != "127.0.0.1:1234" {
		t.Errorf("ready line decoded to %+v", r)
	}
	if rss, _ := p.Memory(); rss <= 0 {
		t.Errorf("RSS of the child %d, want it read from /proc", rss)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
}

// A child that exits before it serves is reported with what it printed.
func TestStartFailureShowsStderr(t *testing.T) {
	_, _, err := start(t, "fail", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "test server did not start: cannot listen: address in use") {
		t.Errorf("error %v, want one that quotes the child's stderr", err)
	}
}

// A child that never says it serves is killed after the timeout.
func TestStartTimeout(t *testing.T) {
	_, _, err := start(t, "silent", 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "test server did not start serving within 200ms") {
		t.Errorf("error %v, want a timeout", err)
	}
}
