//go:build !windows

package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeguard/pipeguard/internal/option"
)

// TestListenErrorsNameTheSocketDir checks that Listen names
// ListenOptions.SocketDir as the package's callers set it, and says so for
// a command to name its own way, while the path it shows stays as it is.
func TestListenErrorsNameTheSocketDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ListenOptions.SocketDir")
	taken := SocketPath(dir, "disk", "v1")
	if err := os.MkdirAll(taken, 0o750); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		o    ListenOptions
		want string
	}{
		"no socket dir":     {o: ListenOptions{}, want: "no socket dir: set ListenOptions.SocketDir"},
		"a file in the way": {o: ListenOptions{SocketDir: dir}, want: taken + " exists and is not a socket: remove it or choose another ListenOptions.SocketDir"},
	}
	flags := func(key string) (string, bool) { return "--socket-dir", key == OptionSocketDir }
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Listen(context.Background(), tc.o, "disk", "v1")
			var oe *option.Error
			if err == nil || err.Error() != tc.want || !errors.As(err, &oe) || oe.Options()[0].Key != OptionSocketDir {
				t.Fatalf("error %#v, want %q", err, tc.want)
			}
			want := tc.want[:len(tc.want)-len("ListenOptions.SocketDir")] + "--socket-dir"
			if got := option.Message(err, flags); got != want {
				t.Fatalf("named %q, want %q", got, want)
			}
		})
	}
}
