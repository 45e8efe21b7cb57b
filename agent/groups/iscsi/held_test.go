package iscsi

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/apierr"
	hostiscsi "github.com/pipeguard/pipeguard/agent/hostops/iscsi"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

const (
	iqn      = "iqn.2020-01.com.example:target-1"
	upperIQN = "iqn.2020-01.COM.EXAMPLE:TARGET-1" // the same target
)

// slowInitiator answers the connection of iqn with its deadline; other
// targets connect at once. It records what ran.
type slowInitiator struct {
	hostiscsi.API // nil: the calls the tests do not make
	mu            sync.Mutex
	ran           []string
}

func (h *slowInitiator) record(op, target string) error {
	h.mu.Lock()
	h.ran = append(h.ran, op+" "+target)
	h.mu.Unlock()
	if target == iqn {
		return &limits.DeadlineError{Group: "iscsi", Op: "Connect-IscsiTarget", Timeout: 90 * time.Second, Setting: "--host-call-timeout-iscsi"}
	}
	return nil
}

func (h *slowInitiator) ConnectTarget(ctx context.Context, p hostiscsi.Portal, target string, auth hostiscsi.AuthType, user, secret string) error {
	return h.record("connect", target)
}

func (h *slowInitiator) DisconnectTarget(ctx context.Context, p hostiscsi.Portal, target string) error {
	return h.record("disconnect", target)
}

// A connection past its deadline holds its target, whatever the portal
// and the case of the IQN: its disconnection and a second connection are
// refused without running; other targets are not held up.
func TestConnectPastItsDeadlineHoldsTheTarget(t *testing.T) {
	host := &slowInitiator{}
	s, err := New(host)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := hostiscsi.Portal{Address: "10.0.0.1", Port: 3260}
	if err := s.connect(ctx, p, iqn, hostiscsi.AuthNone, "", ""); apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("connect = %v, want its deadline", err)
	}
	pending := " is still running (its deadline passed; the storage provider may still be working), retry later"
	err = s.disconnect(ctx, hostiscsi.Portal{Address: "10.0.0.2", Port: 3260}, upperIQN)
	if want := "iscsi DisconnectTarget of " + upperIQN + " is refused: ConnectTarget of this target started "; apierr.Code(err).String() != "Aborted" || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), pending) {
		t.Fatalf("disconnect = %v, want Aborted %q...%q", err, want, pending)
	}
	if err := s.connect(ctx, p, iqn, hostiscsi.AuthNone, "", ""); apierr.Code(err).String() != "Aborted" {
		t.Fatalf("second connect = %v, want Aborted", err)
	}
	if err := s.connect(ctx, p, "iqn.2020-01.com.example:target-2", hostiscsi.AuthNone, "", ""); err != nil {
		t.Fatalf("connecting another target: %v", err)
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	if got, want := strings.Join(host.ran, ", "), "connect "+iqn+", connect iqn.2020-01.com.example:target-2"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
}
