package gate

import (
	"context"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultRescan is how often Watch rereads the policy directory even
// without a change event, in case one was missed.
const DefaultRescan = 30 * time.Second

// settle lets a burst of events (a ConfigMap update swaps a link and
// several files) end before reloading.
const settle = 200 * time.Millisecond

// Watch reloads the policies whenever the directory changes, and every
// rescan, until ctx ends. Results are logged: a policy that does not compile
// is logged with its file:row and the last good one stays in force.
func (e *Engine) Watch(ctx context.Context, rescan time.Duration) error {
	if e.o.PolicyDir == "" {
		return nil
	}
	if rescan <= 0 {
		rescan = DefaultRescan
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(e.o.PolicyDir); err != nil {
		return err
	}
	// Changes made before the watch started produced no event.
	e.reloadAndLog(ctx)
	ticker := time.NewTicker(rescan)
	defer ticker.Stop()
	var pending <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events:
			e.o.Log.V(1).Info("agent policy directory changed", "event", ev.String())
			pending = time.After(settle)
		case err := <-w.Errors:
			e.o.Log.Error(err, "watching the agent policy directory; it is still reread periodically", "dir", e.o.PolicyDir)
		case <-pending:
			pending = nil
			e.reloadAndLog(ctx)
		case <-ticker.C:
			e.reloadAndLog(ctx)
		}
	}
}

func (e *Engine) reloadAndLog(ctx context.Context) {
	changed, err := e.Reload(ctx)
	switch {
	case err != nil:
		e.o.Log.Error(err, "agent policy not reloaded: the last good policy stays in force", "generation", e.Generation())
	case changed:
		e.o.Log.Info("agent policy reloaded", "generation", e.Generation(), "files", e.Files())
	}
}
