package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	fsv1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsv1beta1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1beta1"
	fsv2alpha1 "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1"
	"google.golang.org/grpc/codes"

	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// fakeFS records the host calls that got past confinement. If block is set,
// PathExists signals entered and waits for release, to hold a call in flight.
type fakeFS struct {
	mu    sync.Mutex
	calls []string

	block   bool
	entered chan struct{}
	release chan struct{}
}

func (f *fakeFS) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeFS) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeFS) PathExists(_ context.Context, p string) (bool, error) {
	f.record("PathExists %s", p)
	if f.block {
		f.entered <- struct{}{}
		<-f.release
	}
	return true, nil
}
func (f *fakeFS) Mkdir(_ context.Context, p string) error { f.record("Mkdir %s", p); return nil }
func (f *fakeFS) Rmdir(_ context.Context, p string, force bool) error {
	f.record("Rmdir %s %v", p, force)
	return nil
}
func (f *fakeFS) RmdirContents(_ context.Context, p string) error {
	f.record("RmdirContents %s", p)
	return nil
}
func (f *fakeFS) CreateSymlink(_ context.Context, s, t string) error {
	f.record("CreateSymlink %s %s", s, t)
	return nil
}
func (f *fakeFS) IsSymlink(_ context.Context, p string) (bool, error) {
	f.record("IsSymlink %s", p)
	return false, nil
}

// TestConfinementLinux refuses, through a real socket and real filesystem,
// traversal, prefix-boundary, symlink-escape and alternate-prefix inputs, and
// names the rule in each refusal.
func TestConfinementLinux(t *testing.T) {
	r := start(t, Options{})
	k := r.kubelet
	outside := filepath.Join(filepath.Dir(k), "outside")
	if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(k, "escape")); err != nil {
		t.Fatal(err)
	}
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	v1beta1 := fsv1beta1.NewFilesystemClient(r.dial(t, "filesystem", "v1beta1"))
	v2 := fsv2alpha1.NewFilesystemClient(r.dial(t, "filesystem", "v2alpha1"))
	ctx := context.Background()

	cases := map[string]struct {
		call func() error
		code codes.Code
		msg  string
	}{
		"traversal": {
			call: func() error {
				_, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: k + "/../outside"})
				return err
			},
			code: codes.InvalidArgument, msg: `path: path "` + k + `/../outside" contains a ".." segment: give the path without "." and ".." (confinement rule traversal)`,
		},
		"prefix boundary": {
			call: func() error { _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: k + "X/a"}); return err },
			code: codes.PermissionDenied, msg: `path: path "` + k + `X/a" is outside the allowed roots [` + k + `]: `,
		},
		"outside entirely": {
			call: func() error { _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: outside, Force: true}); return err },
			code: codes.PermissionDenied, msg: "(confinement rule outside-roots)",
		},
		"symlink escape on mkdir": {
			call: func() error { _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: k + "/escape/new"}); return err },
			code: codes.PermissionDenied, msg: `resolves through a symlink to "` + outside + `/new", outside the allowed roots`,
		},
		"symlink escape on lookup below the link": {
			call: func() error {
				_, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: k + "/escape/keep"})
				return err
			},
			code: codes.PermissionDenied, msg: "(confinement rule symlink-escape)",
		},
		"symlink escape as link source": {
			call: func() error {
				_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: k + "/escape", TargetPath: k + "/l2"})
				return err
			},
			code: codes.PermissionDenied, msg: `source_path: path "` + k + `/escape" resolves through a symlink`,
		},
		"link source outside": {
			call: func() error {
				_, err := v1beta1.LinkPath(ctx, &fsv1beta1.LinkPathRequest{SourcePath: "/etc", TargetPath: k + "/l3"})
				return err
			},
			code: codes.PermissionDenied, msg: `source_path: path "/etc" is outside the allowed roots`,
		},
		"link target outside": {
			call: func() error {
				_, err := v1.CreateSymlink(ctx, &fsv1.CreateSymlinkRequest{SourcePath: k, TargetPath: outside + "/l4"})
				return err
			},
			code: codes.PermissionDenied, msg: `target_path: path "` + outside + `/l4" is outside`,
		},
		"symlink escape on RmdirContents": {
			call: func() error {
				_, err := v2.RmdirContents(ctx, &fsv2alpha1.RmdirContentsRequest{Path: k + "/escape"})
				return err
			},
			code: codes.PermissionDenied, msg: "(confinement rule symlink-escape)",
		},
		"windows long-path prefix": {
			call: func() error {
				_, err := v1.PathExists(ctx, &fsv1.PathExistsRequest{Path: `\\?\C:\var\lib\kubelet`})
				return err
			},
			code: codes.InvalidArgument, msg: "(confinement rule not-absolute)",
		},
		"relative": {
			call: func() error { _, err := v1beta1.Mkdir(ctx, &fsv1beta1.MkdirRequest{Path: "pods/x"}); return err },
			code: codes.InvalidArgument, msg: `path: path "pods/x" is not absolute`,
		},
		"empty": {
			call: func() error { _, err := v1.IsSymlink(ctx, &fsv1.IsSymlinkRequest{}); return err },
			code: codes.InvalidArgument, msg: `path: path "" is empty`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, tc.call(), tc.code, tc.msg)
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !os.IsNotExist(err) {
		t.Errorf("a refused Mkdir created %s/new: %v", outside, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("a refused call removed %s/keep: %v", outside, err)
	}
	// The link itself is inside, so removing it is allowed and leaves its
	// target alone.
	if _, err := v1.Rmdir(ctx, &fsv1.RmdirRequest{Path: k + "/escape", Force: true}); err != nil {
		t.Fatalf("Rmdir of the link itself: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("removing the link removed its target's contents: %v", err)
	}
}

// TestConfinementWindowsPaths runs the agent with Windows path rules on real
// sockets, with a fake host filesystem, and checks that refused calls never
// reach the host.
func TestConfinementWindowsPaths(t *testing.T) {
	host := &fakeFS{}
	r := start(t, Options{
		GOOS:        "windows",
		KubeletPath: `C:\var\lib\kubelet`,
		WorkingDirs: []string{`C:\csi`},
		Filesystem:  host,
		WMI:         wmitest.New(),
	})
	v1 := fsv1.NewFilesystemClient(r.dial(t, "filesystem", "v1"))
	ctx := context.Background()
	mkdir := func(p string) error { _, err := v1.Mkdir(ctx, &fsv1.MkdirRequest{Path: p}); return err }

	cases := map[string]struct {
		path string
		code codes.Code
		msg  string
		host string // the call the host sees when accepted
	}{
		"inside, other case": {path: `c:\VAR\lib\kubelet\pods\a`, host: `Mkdir c:\VAR\lib\kubelet\pods\a`},
		"working dir":        {path: `C:\csi\staging\\x`, host: `Mkdir C:\csi\staging\x`},
		"prefix boundary": {path: `C:\var\lib\kubeletX\a`, code: codes.PermissionDenied,
			msg: `path: path "C:\var\lib\kubeletX\a" is outside the allowed roots [C:\var\lib\kubelet C:\csi]: `},
		"traversal":         {path: `C:\var\lib\kubelet\..\..\Windows`, code: codes.InvalidArgument, msg: "(confinement rule traversal)"},
		"long path prefix":  {path: `\\?\C:\var\lib\kubelet\a`, code: codes.InvalidArgument, msg: "(confinement rule alternate-prefix)"},
		"device namespace":  {path: `\\.\C:\var\lib\kubelet\a`, code: codes.InvalidArgument, msg: "(confinement rule alternate-prefix)"},
		"unc":               {path: `\\attacker\share\x`, code: codes.InvalidArgument, msg: "(confinement rule alternate-prefix)"},
		"nt object":         {path: `\??\C:\var\lib\kubelet\a`, code: codes.InvalidArgument, msg: "(confinement rule alternate-prefix)"},
		"device name":       {path: `C:\var\lib\kubelet\CON`, code: codes.InvalidArgument, msg: "(confinement rule device-name)"},
		"data stream":       {path: `C:\var\lib\kubelet\a::$DATA`, code: codes.InvalidArgument, msg: "(confinement rule characters)"},
		"trailing dot root": {path: `C:\var\lib\kubelet.\..\x`, code: codes.InvalidArgument},
		"too long":          {path: `C:\var\lib\kubelet\` + strings.Repeat("a", 300), code: codes.InvalidArgument, msg: "over the limit of 260 (confinement rule length)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(host.Calls())
			err := mkdir(tc.path)
			calls := host.Calls()[before:]
			if tc.code == codes.OK {
				if err != nil {
					t.Fatalf("Mkdir(%q): %v", tc.path, err)
				}
				if len(calls) != 1 || calls[0] != tc.host {
					t.Fatalf("host saw %q, want %q", calls, tc.host)
				}
				return
			}
			wantStatus(t, err, tc.code, tc.msg)
			if len(calls) != 0 {
				t.Fatalf("refused call reached the host: %q", calls)
			}
		})
	}
}
