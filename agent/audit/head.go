package audit

import "path/filepath"

// Head is the end of the chain at one moment: what an anchor records.
type Head struct {
	Seq  uint64
	Hash Hash
	// File is the base name of the file that holds record Seq.
	File string
}

// Head fsyncs the log up to its last record and returns that record's
// sequence number and hash. An anchor published from it names only records
// that are on disk, so a crash right after publishing cannot leave the
// anchor past the end of the files.
func (l *Log) Head() (Head, error) {
	l.mu.Lock()
	h := Head{Seq: l.seq, Hash: l.prev, File: filepath.Base(l.o.Path)}
	l.mu.Unlock()
	if err := l.syncTo(h.Seq); err != nil {
		return Head{}, err
	}
	return h, nil
}

// notifyHead tells Options.OnHead that the head moved to a new file. l.mu is
// held.
func (l *Log) notifyHead() {
	if l.o.OnHead != nil {
		l.o.OnHead()
	}
}
