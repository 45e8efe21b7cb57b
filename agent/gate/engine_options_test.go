package gate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/pipeguard/pipeguard/internal/option"
)

// TestPolicyDirErrorNamesTheOption checks that a policy dir that cannot be
// read is named Options.PolicyDir, as the package's callers set it, and
// said to be that option for a command to name its own way; the path the
// caller gave stays as it was, though it reads like the option.
func TestPolicyDirErrorNamesTheOption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Options.PolicyDir")
	// The system's words for a missing directory (they differ on Windows).
	_, statErr := os.Stat(dir)
	var pe *fs.PathError
	if !errors.As(statErr, &pe) {
		t.Fatalf("os.Stat of a missing directory: %v", statErr)
	}
	missing := pe.Err.Error()
	_, err := New(context.Background(), Options{Log: logr.Discard(), PolicyDir: dir})
	want := "reading agent policies: open " + dir + ": " + missing + "; create the directory or fix Options.PolicyDir"
	var oe *option.Error
	if err == nil || !strings.HasSuffix(err.Error(), want) || !errors.As(err, &oe) || oe.Options()[0].Key != OptionPolicyDir {
		t.Fatalf("error %#v, want %q", err, want)
	}
	flags := func(key string) (string, bool) { return "--policy-dir", key == OptionPolicyDir }
	if got := option.Message(err, flags); !strings.HasSuffix(got, "open "+dir+": "+missing+"; create the directory or fix --policy-dir") {
		t.Fatalf("named %q", got)
	}
}
