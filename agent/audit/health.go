package audit

import "errors"

// Path returns the file the log writes to, or StdoutPath.
func (l *Log) Path() string { return l.o.Path }

// Writable reports whether the log accepts records: nil while it is open
// and no failed write or rotation has left it broken; otherwise the error
// Append returns. It changes nothing, but takes the log's lock, so it
// waits for a write in progress: a caller that must not wait (a health
// probe) runs it with a deadline, and a deadline passed means a write is
// stuck.
func (l *Log) Writable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	if l.closed {
		return errors.New("audit log is closed")
	}
	return nil
}
