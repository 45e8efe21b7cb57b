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
	l.rotating = true
	defer func() { l.rotating = false }()
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
