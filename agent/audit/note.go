package audit

import "errors"

// Checkpoint writes a checkpoint record with annotations, which name its
// kind (AnnotationCheckpoint), and returns its sequence number: the
// webhook backend names with one each record its receiver refused.
func (l *Log) Checkpoint(annotations map[string]string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("audit log is closed")
	}
	return l.checkpoint(annotations)
}
