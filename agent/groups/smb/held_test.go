package smb

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeguard/pipeguard/agent/apierr"
	"github.com/pipeguard/pipeguard/agent/confine"
	"github.com/pipeguard/pipeguard/agent/hostops/limits"
	hostsmb "github.com/pipeguard/pipeguard/agent/hostops/smb"
)

// slowMapping is an SMB host whose mapping of shareRoot answers its
// deadline when the test says, while the SMB client goes on: the share
// reads mapped once the test says so. Other shares map at once.
type slowMapping struct {
	hostsmb.API // nil: the calls the tests do not make
	started     chan string
	deadline    chan struct{}
	mu          sync.Mutex
	mapped      bool
	news        int
}

func (h *slowMapping) IsMapped(ctx context.Context, root string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return root == shareRoot && h.mapped, nil
}

func (h *slowMapping) PathValid(ctx context.Context, root string) (bool, error) { return true, nil }

func (h *slowMapping) NewGlobalMapping(ctx context.Context, root, user, password string, privacy bool) error {
	h.mu.Lock()
	h.news++
	h.mu.Unlock()
	h.started <- root
	if root != shareRoot {
		return nil
	}
	<-h.deadline
	return &limits.DeadlineError{Group: "smb", Op: "New-SmbGlobalMapping", Timeout: time.Minute, Setting: "--host-call-timeout-smb"}
}

func (h *slowMapping) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.news }

// A mapping past its deadline holds its share: a change of the share that
// waited for the lock meanwhile is refused, not run, as is the next one,
// until the share reads mapped; then the next change runs.
func TestMappingPastItsDeadlineHoldsTheShare(t *testing.T) {
	host := &slowMapping{started: make(chan string, 10), deadline: make(chan struct{})}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(host, conf, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.NewSmbGlobalMapping(ctx, shareRoot+`\pvc-1`, "", "u", "p") }()
	<-host.started
	go func() { second <- s.NewSmbGlobalMapping(ctx, `\\SRV\Share\pvc-2`, "", "u", "p") }()
	if err := s.NewSmbGlobalMapping(ctx, `\\srv\other`, "", "u", "p"); err != nil {
		t.Fatalf("mapping another share: %v", err)
	}
	<-host.started
	close(host.deadline)
	if err := <-first; apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("first mapping = %v, want its deadline", err)
	}
	want := `smb NewSmbGlobalMapping of \\SRV\Share is refused: NewSmbGlobalMapping of this share started `
	pending := " is still running (its deadline passed; the storage provider may still be working), retry later"
	// The second waited for the lock or came after it: either way refused.
	if err := <-second; apierr.Code(err).String() != "Aborted" || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), pending) {
		t.Fatalf("second mapping = %v, want Aborted %q...%q", err, want, pending)
	}
	err = s.RemoveSmbGlobalMapping(ctx, shareRoot)
	if want := `smb RemoveSmbGlobalMapping of \\srv\share is refused: NewSmbGlobalMapping of this share started `; apierr.Code(err).String() != "Aborted" || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("RemoveSmbGlobalMapping = %v, want Aborted %q...", err, want)
	}
	if n := host.count(); n != 2 {
		t.Fatalf("New-SmbGlobalMapping ran %d times, want 2 (the first, the other share)", n)
	}
	host.mu.Lock()
	host.mapped = true
	host.mu.Unlock()
	if err := s.NewSmbGlobalMapping(ctx, shareRoot+`\pvc-2`, "", "u", "p"); err != nil {
		t.Fatalf("mapping once the share reads mapped: %v", err)
	}
}

// hangingRemoval is an SMB host whose removal of shareRoot's mapping
// answers its deadline while the SMB client goes on removing it: the share
// reads unmapped once the test says so.
type hangingRemoval struct {
	hostsmb.API
	mu      sync.Mutex
	mapped  bool
	removes int
	news    int
}

func (h *hangingRemoval) IsMapped(ctx context.Context, root string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mapped, nil
}

func (h *hangingRemoval) PathValid(ctx context.Context, root string) (bool, error) { return true, nil }

func (h *hangingRemoval) RemoveGlobalMapping(ctx context.Context, root string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removes++
	return &limits.DeadlineError{Group: "smb", Op: "Remove-SmbGlobalMapping", Timeout: time.Minute, Setting: "--host-call-timeout-smb"}
}

func (h *hangingRemoval) NewGlobalMapping(ctx context.Context, root, user, password string, privacy bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.news++
	return nil
}

// A removal past its deadline holds its share while the mapping still
// exists: a new mapping is refused, not run (it would race the removal);
// once the mapping is gone, the share is mapped anew.
func TestRemovalPastItsDeadlineHoldsTheShare(t *testing.T) {
	host := &hangingRemoval{mapped: true}
	conf, err := confine.New(confine.Options{Flavour: confine.Windows, Roots: []string{`C:\var\lib\kubelet`}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(host, conf, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.RemoveSmbGlobalMapping(ctx, shareRoot); apierr.Code(err).String() != "DeadlineExceeded" {
		t.Fatalf("RemoveSmbGlobalMapping = %v, want its deadline", err)
	}
	err = s.NewSmbGlobalMapping(ctx, shareRoot+`\pvc-1`, "", "u", "p")
	want := `smb NewSmbGlobalMapping of \\srv\share is refused: RemoveSmbGlobalMapping of this share started `
	if apierr.Code(err).String() != "Aborted" || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("NewSmbGlobalMapping = %v, want Aborted %q...", err, want)
	}
	host.mu.Lock()
	host.mapped = false
	host.mu.Unlock()
	if err := s.NewSmbGlobalMapping(ctx, shareRoot+`\pvc-1`, "", "u", "p"); err != nil {
		t.Fatalf("NewSmbGlobalMapping once the mapping is gone: %v", err)
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	if host.removes != 1 || host.news != 1 {
		t.Fatalf("%d removals and %d new mappings ran, want 1 and 1", host.removes, host.news)
	}
}
