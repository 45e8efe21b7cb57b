package audit

import (
	"errors"
	"testing"

	"github.com/pipeguard/pipeguard/internal/option"
)

// TestStdoutIsNotRotated checks that the log on standard output, which
// cannot be renamed, refuses the options that would rotate it, naming
// Options.Path as the library's callers set it.
func TestStdoutIsNotRotated(t *testing.T) {
	_, err := Open(Options{Path: StdoutPath, MaxSize: 1 << 20})
	if err == nil || err.Error() != "the audit log on standard output (Options.Path -) is not rotated: leave max size and max backups at 0" {
		t.Fatalf("rotating standard output: %v", err)
	}
	var oe *option.Error
	if !errors.As(err, &oe) || len(oe.Options()) != 1 || oe.Options()[0].Key != OptionPath {
		t.Fatalf("the error does not say it names %s: %#v", OptionPath, err)
	}
}
