package audit

import "fmt"

// Sync fsyncs everything written so far.
func (l *Log) Sync() error {
	l.mu.Lock()
	seq := l.seq
	l.mu.Unlock()
	return l.syncTo(seq)
}

// syncTo returns once record seq is on disk. One caller at a time fsyncs,
// covering every record written before it started; the others wait for it
// and are all woken when it ends, so those it covered return at once and
// one of the rest starts the next fsync for everything written meanwhile
// (group commit).
func (l *Log) syncTo(seq uint64) error {
	if l.synced.Load() >= seq {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for l.synced.Load() < seq {
		if l.syncing {
			l.syncDone.Wait()
			continue
		}
		l.syncing = true
		l.mu.Lock()
		f, target := l.f, l.seq
		l.mu.Unlock()
		l.syncMu.Unlock()
		err := f.Sync()
		l.syncMu.Lock()
		l.syncing = false
		if err == nil {
			l.storeSynced(target)
		}
		l.syncDone.Broadcast()
		if err != nil {
			if l.synced.Load() >= seq {
				return nil // the file was rotated and synced meanwhile
			}
			l.syncErrs.Add(1)
			return fmt.Errorf("syncing the audit log %s: %w", l.o.Path, err)
		}
	}
	return nil
}

func (l *Log) storeSynced(seq uint64) {
	for {
		cur := l.synced.Load()
		if cur >= seq || l.synced.CompareAndSwap(cur, seq) {
			return
		}
	}
}
