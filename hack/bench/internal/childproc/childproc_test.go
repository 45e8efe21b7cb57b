package childproc

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The test binary is the child: run with CHILDPROC_TEST set, it acts as
// that variable says instead of running the tests. Starting, stopping and
// a start that fails are exercised by the tools' tests, whose servers run
// through this package.
func TestMain(m *testing.M) {
	if os.Getenv("CHILDPROC_TEST") == "silent" {
		// A child that hangs on purpose: it never says it serves, and is killed.
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A child that never says it serves is killed after the timeout.
func TestStartTimeout(t *testing.T) {
	var ready struct{ Address string }
	_, err := Start(context.Background(), "test server", nil, []string{"CHILDPROC_TEST=silent"}, 200*time.Millisecond,
		&ready, func() bool { return ready.Address != "" })
	if err == nil || !strings.Contains(err.Error(), "test server did not start serving within 200ms") {
		t.Errorf("error %v, want a timeout", err)
	}
}
