package option_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/pipeguard/pipeguard/internal/option"
)

var path = option.Name{Key: "audit.path", Field: "Options.Path"}

// flags is a command's table of the flags behind option keys.
func flags(key string) (string, bool) {
	f, ok := map[string]string{"audit.path": "--audit-log-path"}[key]
	return f, ok
}

func TestMessages(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/var/log/Options.Path/audit.log", Err: fs.ErrPermission}
	typed := option.Errorf("opening the audit log: %w; choose another %s", cause, path)
	cases := map[string]struct {
		err     error
		namer   option.Namer
		want    string
		wrapped error // errors.Is must still find it
	}{
		"a library names the Go option": {
			err: option.Errorf("no audit log path: set %s", path), want: "no audit log path: set Options.Path",
		},
		"a command names the flag": {
			err: option.Errorf("no audit log path: set %s", path), namer: flags, want: "no audit log path: set --audit-log-path",
		},
		"an option the command has no flag for keeps its Go name": {
			err:   option.Errorf("set %s", option.Name{Key: "anchor.head", Field: "Options.Head"}),
			namer: flags, want: "set Options.Head",
		},
		"wrapped several times": {
			err:   fmt.Errorf("starting: %w", fmt.Errorf("the audit log: %w", typed)),
			namer: flags, wrapped: fs.ErrPermission,
			want: "starting: the audit log: opening the audit log: open /var/log/Options.Path/audit.log: permission denied; choose another --audit-log-path",
		},
		"joined with another error": {
			err:   errors.Join(errors.New("closing: disk full"), fmt.Errorf("x: %w", typed)),
			namer: flags, wrapped: fs.ErrPermission,
			want: "closing: disk full\nx: opening the audit log: open /var/log/Options.Path/audit.log: permission denied; choose another --audit-log-path",
		},
		"a user's path that reads like an option stays as given": {
			err:   option.Errorf("no audit log at %s: give the %s of the agent", "/tmp/Options.Path/audit.log", path),
			namer: flags, want: "no audit log at /tmp/Options.Path/audit.log: give the --audit-log-path of the agent",
		},
		"text that is not typed is never renamed": {
			err: fmt.Errorf("set Options.Path"), namer: flags, want: "set Options.Path",
		},
		"an option error inside another": {
			err:   option.Errorf("listening: %w (see %s)", option.Errorf("no dir: set %s", path), path),
			namer: flags, want: "listening: no dir: set --audit-log-path (see --audit-log-path)",
		},
		"a literal percent": {
			err:   option.Errorf("100%% of %s: %w", path, fs.ErrNotExist),
			namer: flags, want: "100% of --audit-log-path: file does not exist", wrapped: fs.ErrNotExist,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := option.Message(tc.err, tc.namer); got != tc.want {
				t.Errorf("Message:\n got %q\nwant %q", got, tc.want)
			}
			if tc.wrapped != nil && !errors.Is(tc.err, tc.wrapped) {
				t.Errorf("errors.Is(%v) = false", tc.wrapped)
			}
		})
	}
}

// TestErrorIsTheLibraryMessage checks that Error, which every caller that
// knows nothing of options reads, names the Go option, and that the error
// says which option it names.
func TestErrorIsTheLibraryMessage(t *testing.T) {
	err := option.Errorf("opening the audit log: %w; choose another %s", fs.ErrPermission, path)
	if got, want := err.Error(), "opening the audit log: permission denied; choose another Options.Path"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	var oe *option.Error
	if !errors.As(err, &oe) || len(oe.Options()) != 1 || oe.Options()[0] != path {
		t.Fatalf("options of %#v: want [%v]", err, path)
	}
	if got := option.Message(err, nil); got != err.Error() {
		t.Fatalf("Message without a namer = %q", got)
	}
}

func TestTextRender(t *testing.T) {
	txt := option.Sprintf("records seq %d–%d were removed under %s", 1, 9, option.Name{Key: "audit.path", Field: "Options.Path"})
	if got, want := txt.String(), "records seq 1–9 were removed under Options.Path"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := txt.Render(flags), "records seq 1–9 were removed under --audit-log-path"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
}
