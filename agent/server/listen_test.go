package server

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	cases := map[string]struct {
		group, version, pipe, socket string
	}{
		"filesystem v1":  {"filesystem", "v1", `\\.\pipe\csi-proxy-filesystem-v1`, "/run/pg/csi-proxy-filesystem-v1.sock"},
		"iscsi v1alpha2": {"iscsi", "v1alpha2", `\\.\pipe\csi-proxy-iscsi-v1alpha2`, "/run/pg/csi-proxy-iscsi-v1alpha2.sock"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PipePath(tc.group, tc.version); got != tc.pipe {
				t.Errorf("PipePath = %q, want %q", got, tc.pipe)
			}
			if got := SocketPath("/run/pg", tc.group, tc.version); got != filepath.FromSlash(tc.socket) {
				t.Errorf("SocketPath = %q, want %q", got, tc.socket)
			}
		})
	}
}

func TestListenSocketMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets stand in for pipes only off Windows")
	}
	dir := t.TempDir()
	o := ListenOptions{SocketDir: dir}
	l, err := Listen(context.Background(), o, "filesystem", "v1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(filepath.Join(dir, "csi-proxy-filesystem-v1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != SocketMode {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), os.FileMode(SocketMode))
	}
	// A second agent replaces a stale socket but not other files.
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, "csi-proxy-disk-v1.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Listen(context.Background(), o, "disk", "v1")
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("Listen over a regular file: %v, want 'is not a socket'", err)
	}
}

func TestValidateSDDL(t *testing.T) {
	cases := map[string]struct {
		sddl, wantErr string
	}{
		"default":    {DefaultSDDL, ""},
		"empty":      {"", ""},
		"not sddl":   {"Everyone", "is not SDDL"},
		"no dacl":    {"O:SYG:SY", "no DACL"},
		"unbalanced": {"D:P(A;;GA;;;SY", "unbalanced"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateSDDL(tc.sddl)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("ValidateSDDL(%q) = %v, want %q", tc.sddl, err, tc.wantErr)
			}
		})
	}
}
