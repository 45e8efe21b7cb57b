package smb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pipeguard/pipeguard/agent/hostops/limits"
)

// shareLocks serialize the mapping changes of each share, as CSI Proxy
// does for all of them: two mounts of one share must not both create its
// global mapping. Shares are apart: a share whose mapping hangs holds up
// the changes of that share only. An entry lives while a request holds or
// waits for it, so there are at most as many as requests in flight. A
// change that ended by its deadline releases the lock but may still run in
// the SMB client: held.go then refuses the share's next change until it
// has checked.
type shareLocks struct {
	mu sync.Mutex
	m  map[string]*shareLock
}

type shareLock struct {
	held  chan struct{} // full while held
	users int           // requests holding or waiting
}

// lock takes the lock of share within ctx, or answers ctx's error.
func (l *shareLocks) lock(ctx context.Context, share string) (func(), error) {
	key := strings.ToLower(share) // UNC paths are not case-sensitive
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*shareLock{}
	}
	sl := l.m[key]
	if sl == nil {
		sl = &shareLock{held: make(chan struct{}, 1)}
		l.m[key] = sl
	}
	sl.users++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if sl.users--; sl.users == 0 {
			delete(l.m, key)
		}
	}
	if ctx.Err() == nil {
		select {
		case sl.held <- struct{}{}:
			if ctx.Err() == nil {
				return func() { <-sl.held; done() }, nil
			}
			<-sl.held
		case <-ctx.Done():
		}
	}
	done()
	return nil, ctx.Err()
}

// withDeadline gives ctx the group's deadline for the whole request: the
// wait for the share's lock and every host call it makes.
func (s *Server) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.deadline <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, s.deadline, limits.ErrHostCallDeadline)
}

// lockShare takes root's lock within ctx, which withDeadline made.
func (s *Server) lockShare(parent, ctx context.Context, method, root string) (func(), error) {
	unlock, err := s.locks.lock(ctx, root)
	if err == nil {
		return unlock, nil
	}
	if parent.Err() == nil && context.Cause(ctx) == limits.ErrHostCallDeadline {
		return nil, fmt.Errorf("smb %s of %s did not start within %v: another mapping change of the same share held its lock all that time, so it was not run (host operation deadline, counted for the whole request; %s): %w",
			method, root, s.deadline, s.setting, err)
	}
	return nil, fmt.Errorf("smb %s of %s did not start: the request ended while another mapping change of the same share held its lock: %w", method, root, err)
}

// ended explains err, the error of a host call of a request, when the
// request's own deadline cut it.
func (s *Server) ended(parent, ctx context.Context, method, root string, err error) error {
	if err == nil || parent.Err() != nil || context.Cause(ctx) != limits.ErrHostCallDeadline {
		return err
	}
	return fmt.Errorf("smb %s of %s did not finish within %v (host operation deadline, counted for the whole request; %s): %w", method, root, s.deadline, s.setting, err)
}

// WithDeadline gives every request d, set by setting (say
// "--host-call-timeout-smb"), for all of it: the wait for its share's lock
// and each host call it makes. 0 leaves the requests the deadlines of
// their host calls only.
func (s *Server) WithDeadline(d time.Duration, setting string) *Server {
	s.deadline, s.setting = d, setting
	return s
}
