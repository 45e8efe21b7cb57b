package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// renameAside renames the current file to a free backup name.
func (l *Log) renameAside() (string, error) {
	now := l.o.Now()
	for n := 0; ; n++ {
		name := backupName(l.o.Path, now, n)
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name, os.Rename(l.o.Path, name)
		}
	}
}

// checkpoint writes a checkpoint record. l.mu is held.
func (l *Log) checkpoint(annotations map[string]string) (uint64, error) {
	return l.appendLocked(l.checkpointEvent(annotations))
}

// checkpointEvent is a checkpoint record, and restarts the count of records
// to the next periodic checkpoint. l.mu is held.
func (l *Log) checkpointEvent(annotations map[string]string) *Event {
	now := l.o.Now()
	annotations[AnnotationRecord] = RecordCheckpoint
	ev := &Event{
		Kind: Kind, APIVersion: APIVersion, Level: LevelMetadata,
		AuditID: l.ids.New(), Stage: StageResponseComplete,
		RequestURI: "pipeguard:checkpoint", Verb: "checkpoint",
		User:                     UserInfo{Username: "system:pipeguard-agent"},
		RequestReceivedTimestamp: MicroTime{now}, StageTimestamp: MicroTime{now},
		Annotations: annotations,
	}
	l.sinceCP = 0
	return ev
}

// rotate syncs and renames the current file, opens a new one, writes a
// rotate checkpoint to it and removes the oldest backups beyond MaxBackups.
// l.mu is held.
func (l *Log) rotate() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("syncing the audit log before rotation: %w", err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("closing the audit log for rotation: %w", err)
	}
	l.storeSynced(l.seq)
	rotated, err := l.renameAside()
	if err != nil {
		l.broken = fmt.Errorf("rotating the audit log: %w; restart the agent once %s is writable", err, filepath.Dir(l.o.Path))
		return l.broken
	}
	if err := l.openCurrent(); err != nil {
		l.broken = err
		return err
	}
	if err := syncDir(l.o.Path); err != nil {
		l.broken = err
		return err
	}
	l.size = 0
	if _, err := l.checkpoint(map[string]string{AnnotationCheckpoint: "rotate", AnnotationPreviousFile: filepath.Base(rotated)}); err != nil {
		return err
	}
	err = l.prune()
	l.notifyHead()
	return err
}

// prune removes the oldest backups beyond MaxBackups, first writing a
// checkpoint naming each file, its sequence numbers and its last hash, so
// that verify can tell a pruned file from a deleted one. l.mu is held.
func (l *Log) prune() error {
	if l.o.MaxBackups == 0 {
		return nil
	}
	backups, err := Backups(l.o.Path)
	if err != nil {
		return fmt.Errorf("listing rotated audit files: %w", err)
	}
	removed := false
	defer func() {
		if removed {
			if err := syncDir(l.o.Path); err != nil {
				l.o.Log.Error(err, "a removed rotated audit file may reappear after a power loss")
			}
		}
	}()
	for len(backups) > l.o.MaxBackups {
		old := backups[0]
		backups = backups[1:]
		first, last, lastHash, err := fileRange(old)
		if err != nil {
			l.o.Log.Error(err, "not removing a rotated audit file that cannot be read", "file", old)
			continue
		}
		// Prune checkpoints are cumulative, so the newest one accounts for
		// every file removed before, even once those checkpoints are pruned.
		if first == 1 || l.prunedThrough == first-1 {
			first = 1
			l.prunedThrough = last
		}
		if _, err := l.checkpoint(map[string]string{
			AnnotationCheckpoint: "prune",
			AnnotationPrunedFile: filepath.Base(old),
			AnnotationPrunedSeqs: fmt.Sprintf("%d-%d", first, last),
			AnnotationPrunedHash: lastHash.String(),
		}); err != nil {
			return err
		}
		if err := os.Remove(old); err != nil {
			l.o.Log.Error(err, "removing a rotated audit file beyond the backups kept", "file", old, "maxBackups", l.o.MaxBackups)
		} else {
			removed = true
		}
	}
	return nil
}

// findPrunedThrough finds the newest cumulative prune checkpoint, reading
// files from the newest until one holds it.
func findPrunedThrough(path string) uint64 {
	files, err := Files(path)
	if err != nil {
		return 0
	}
	for i := len(files) - 1; i >= 0; i-- {
		var through uint64
		_ = scanFile(files[i], func(r Record) error {
			if r.Err == nil && r.Event.Annotation(AnnotationCheckpoint) == "prune" {
				if p, err := parsePrune(r); err == nil && p.first == 1 && p.last > through {
					through = p.last
				}
			}
			return nil
		})
		if through > 0 {
			return through
		}
	}
	return 0
}

// fileRange returns the first and last sequence numbers of a file and the
// hash of its last record.
func fileRange(path string) (first, last uint64, lastHash Hash, err error) {
	var prevRaw []byte
	var prevHash Hash
	err = scanFile(path, func(r Record) error {
		if r.Err != nil {
			return r.Err
		}
		if first == 0 {
			first = r.Seq
		}
		last, prevRaw, prevHash = r.Seq, r.Raw, r.Prev
		return nil
	})
	if err == nil && first == 0 {
		err = fmt.Errorf("%s holds no records", path)
	}
	if err == nil {
		lastHash = Link(prevHash, prevRaw)
	}
	return first, last, lastHash, err
}
