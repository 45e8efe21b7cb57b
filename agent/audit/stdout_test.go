package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestStdoutLogVerifies writes the log to standard output, as
// --audit-log-path - does, and verifies the stream a collector would read.
func TestStdoutLogVerifies(t *testing.T) {
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	saved := os.Stdout
	os.Stdout = out
	defer func() { os.Stdout = saved }()

	l, err := Open(Options{Path: StdoutPath, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	write(t, l, 0, 20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.Stdout = saved
	if _, err := out.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(Source{Reader: out, Name: "stdout"})
	if err != nil || !rep.OK() || rep.First != 1 || rep.Last != l.Seq() || rep.Last != 22 {
		t.Fatalf("verify of standard output: err=%v ok=%v first=%d last=%d problems=%v", err, rep.OK(), rep.First, rep.Last, rep.Problems)
	}

	_, err = Open(Options{Path: StdoutPath, MaxSize: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "the audit log on standard output (Options.Path -) is not rotated") {
		t.Fatalf("rotating standard output: %v", err)
	}
}
