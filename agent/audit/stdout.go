package audit

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/pipeguard/pipeguard/internal/option"
)

// StdoutPath as Options.Path writes the records to standard output, as
// kube-apiserver does with --audit-log-path -, for a log collector that
// reads the agent's output. Nothing is rotated; each start begins a new
// chain at seq 1 with a start checkpoint, since the agent cannot read back
// where the previous run's chain ended.
const StdoutPath = "-"

// stdoutFile writes to standard output. Sync does nothing: a pipe or a
// terminal has nothing to flush, and the collector owns durability.
type stdoutFile struct{}

func (stdoutFile) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdoutFile) Sync() error                 { return nil }
func (stdoutFile) Close() error                { return nil }
func (stdoutFile) Truncate(int64) error {
	return errors.New("standard output cannot take back a partial record")
}

func openStdout(o Options) (*Log, error) {
	if o.MaxSize != 0 || o.MaxBackups != 0 {
		return nil, option.Errorf("the audit log on standard output (%s -) is not rotated: leave max size and max backups at 0", pathOption)
	}
	if o.OpenFile == nil {
		o.OpenFile = func(string) (File, error) { return stdoutFile{}, nil }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = DefaultCheckpointEvery
	}
	ids, err := NewIDs()
	if err != nil {
		return nil, err
	}
	l := &Log{o: o, prev: Genesis(), ids: ids}
	l.syncDone = sync.NewCond(&l.syncMu)
	if err := l.openCurrent(); err != nil {
		return nil, err
	}
	if _, err := l.checkpoint(map[string]string{AnnotationCheckpoint: "start"}); err != nil {
		return nil, err
	}
	return l, nil
}
