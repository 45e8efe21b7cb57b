package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pipeguard/pipeguard/internal/option"
)

// TestErrorsNameOptionsPath checks that the writer's errors name
// Options.Path as the package's callers set it, and say so for a command
// to name its own way; a path that reads like the option stays as given.
func TestErrorsNameOptionsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Options.Path")
	path := filepath.Join(dir, "audit.log")
	cannotOpen := func(p string) (File, error) { return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission} }
	cases := map[string]struct {
		o           Options
		want, named string
	}{
		"no path": {
			o:     Options{},
			want:  "no audit log path: set Options.Path",
			named: "no audit log path: set --audit-log-path",
		},
		"a file that cannot be opened": {
			o:     Options{Path: path, OpenFile: cannotOpen},
			want:  "opening the audit log: open " + path + ": permission denied; make its directory writable by the agent or choose another Options.Path",
			named: "opening the audit log: open " + path + ": permission denied; make its directory writable by the agent or choose another --audit-log-path",
		},
		"no rotated files": {
			o:     Options{Path: StdoutPath, MaxBackups: 3},
			want:  "the audit log on standard output (Options.Path -) is not rotated: leave max size and max backups at 0",
			named: "the audit log on standard output (--audit-log-path -) is not rotated: leave max size and max backups at 0",
		},
	}
	flags := func(key string) (string, bool) { return "--audit-log-path", key == OptionPath }
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(tc.o)
			var oe *option.Error
			if err == nil || err.Error() != tc.want || !errors.As(err, &oe) || oe.Options()[0].Key != OptionPath {
				t.Fatalf("error %#v\nwant %q", err, tc.want)
			}
			if got := option.Message(fmt.Errorf("Guard.Audit.Path: %w", err), flags); got != "Guard.Audit.Path: "+tc.named {
				t.Fatalf("named %q\nwant %q", got, tc.named)
			}
		})
	}
	_, err := Files(path)
	want := "no audit log at " + path + " and no rotated files beside it: give the --audit-log-path of the agent, or a directory of audit files"
	if got := option.Message(err, flags); got != want {
		t.Fatalf("Files: %q\nwant %q", got, want)
	}
}
