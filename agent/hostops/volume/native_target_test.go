package volume

import (
	"context"
	"errors"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// GetVolumeIDFromTargetPath reads the reparse point at the path: a volume
// mount point answers its volume, a link to a path a *LinkError with the
// target as Get-Item's Target gives it, anything else an error.
func TestNativeGetVolumeIDFromTargetPath(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.host.SetReparseData(`C:\k\pods\p\mount`, win32test.SymlinkReparse(`\??\C:\k\plugins\staging`, `C:\k\plugins\staging`, 0))
	f.host.SetReparseData(`C:\k\junction`, win32test.MountPointReparse(`\??\C:\k\dir`, `C:\k\dir`))
	f.host.SetReparseData(`C:\k\relative`, win32test.SymlinkReparse(`..\staging`, `..\staging`, win32.SYMLINK_FLAG_RELATIVE))
	f.host.SetReparseData(`C:\k\share`, win32test.SymlinkReparse(`\??\UNC\srv\share\`, `\\srv\share\`, 0))
	f.host.SetReparseData(`C:\k\uncnamed`, win32test.SymlinkReparse(`UNC\dir`, `UNC\dir`, win32.SYMLINK_FLAG_RELATIVE))
	f.host.SetReparseData(`C:\k\volumelink`, win32test.SymlinkReparse(`\??\Volume{cccccccc-0000-0000-0000-000000000003}\`, "", 0))
	f.host.SetReparseData(`C:\k\prefixed`, win32test.MountPointReparse(`\\?\Volume{cccccccc-0000-0000-0000-000000000003}`, ""))
	f.host.SetReparseData(`C:\k\intovolume`, win32test.MountPointReparse(`\??\Volume{cccccccc-0000-0000-0000-000000000003}\dir`, ""))
	f.host.SetReparseData(`C:\k\badguid`, win32test.MountPointReparse(`\??\Volume{cccccccc-0000}\`, ""))
	f.host.SetReparseData(`C:\k\dedup`, win32test.OtherReparse(0x80000013, []byte("data")))
	f.host.SetReparseData(`C:\k\garbage`, win32test.OtherReparse(win32.IO_REPARSE_TAG_MOUNT_POINT, []byte{1, 0, 200, 0, 0, 0, 0, 0}))
	f.host.SetReparseData(`C:\k\nul`, win32test.MountPointReparse("\\??\\Volume{cccccccc-0000-0000-0000-000000000003}\\\x00C:\\x", ""))
	f.host.Before = func(c win32test.Call) error {
		if c.Path == `C:\k\gone` {
			return win32test.Fail("CreateFileW", c.Path, win32test.ErrFileNotFound)
		}
		return nil
	}
	if err := f.n.MountVolume(ctx, volA, `C:\k\plugins\staging`); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		`C:\k\pods\p\mount`: `C:\k\plugins\staging`,
		`C:\k\junction`:     `C:\k\dir`,
		`C:\k\relative`:     `..\staging`,
		`C:\k\share`:        `\\srv\share\`,
		`C:\k\uncnamed`:     `UNC\dir`,
		`C:\k\intovolume`:   `\\?\Volume{cccccccc-0000-0000-0000-000000000003}\dir`,
		`C:\k\badguid`:      `\\?\Volume{cccccccc-0000}\`,
	}
	for path, target := range links {
		_, err := f.n.GetVolumeIDFromTargetPath(ctx, path)
		var link *LinkError
		if !errors.As(err, &link) || *link != (LinkError{Path: path, Target: target}) {
			t.Errorf("%s: %v, want a LinkError to %s", path, err, target)
		}
	}
	for _, path := range []string{`C:\k\plugins\staging`, `C:\k\plugins\staging\`, `C:\k\volumelink`, `C:\k\prefixed`} {
		want := volA
		if path != `C:\k\plugins\staging` && path != `C:\k\plugins\staging\` {
			want = volC
		}
		if got, err := f.n.GetVolumeIDFromTargetPath(ctx, path); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", path, got, err, want)
		}
	}
	faults := map[string]string{
		`C:\k\plain`: `C:\k\plain is not a volume mount point`,
		`C:\k\dedup`: `C:\k\dedup is not a volume mount point: it is a reparse point of tag 0x80000013`,
		`C:\k\garbage`: `reading the volume mounted at C:\k\garbage: the reparse point at C:\k\garbage is malformed: ` +
			`REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: 1 is odd: UTF-16 names start at even offsets`,
		`C:\k\nul`: `reading the volume mounted at C:\k\nul: the reparse point at C:\k\nul is malformed: ` +
			`REPARSE_DATA_BUFFER: SubstituteNameOffset at offset 8: the name at 0 holds a NUL character`,
		`C:\k\gone`: `reading the volume mounted at C:\k\gone: CreateFileW C:\k\gone: The system cannot find the file specified.`,
	}
	for path, want := range faults {
		got, err := f.n.GetVolumeIDFromTargetPath(ctx, path)
		if err == nil || err.Error() != want || got != "" {
			t.Errorf("%s: %q, %v\nwant %q", path, got, err, want)
		}
		var link *LinkError
		if errors.As(err, &link) {
			t.Errorf("%s: a LinkError, which the caller would follow", path)
		}
	}
}

// GetClosestVolumeIDFromTargetPath walks up and through links as the
// PowerShell script did, within 256 steps.
func TestNativeGetClosestVolumeIDFromTargetPath(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.n.MountVolume(ctx, volA, `C:\k\plugins\staging`); err != nil {
		t.Fatal(err)
	}
	f.host.SetReparseData(`C:\k\pods\p\mount`, win32test.SymlinkReparse(`\??\C:\k\plugins\staging`, `C:\k\plugins\staging`, 0))
	f.host.SetReparseData(`C:\k\pods\p\rel`, win32test.SymlinkReparse(`..\..\plugins\.\staging`, ``, win32.SYMLINK_FLAG_RELATIVE))
	f.host.SetReparseData(`C:\k\pods\p\rooted`, win32test.SymlinkReparse(`\k\plugins\staging`, ``, win32.SYMLINK_FLAG_RELATIVE))
	f.host.SetReparseData(`C:\k\pods\p\junction`, win32test.MountPointReparse(`\??\C:\k\plugins\staging\sub`, ``))
	f.host.SetReparseData(`C:\loop\a`, win32test.SymlinkReparse(`\??\C:\loop\b`, ``, 0))
	f.host.SetReparseData(`C:\loop\b`, win32test.SymlinkReparse(`\??\C:\loop\a`, ``, 0))
	f.host.SetReparseData(`C:\k\share`, win32test.SymlinkReparse(`\??\UNC\srv\share\`, `\\srv\share\`, 0))
	f.host.SetReparseData(`C:\k\bad`, []byte{1, 2, 3})
	found := map[string]string{
		`C:\k\pods\p\mount`:           volA,
		`C:\k\pods\p\mount\data\file`: volA,
		`C:\k\pods\p\rel`:             volA,
		`C:\k\pods\p\rooted`:          volA,
		`C:\k\pods\p\junction`:        volA,
		`C:\k\pods\p\other`:           volC,
		`C:\`:                         volC,
		`c:/k/pods`:                   volC,
		`\\?\C:\k\pods`:               volC,
		`\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\dir\x`: volB,
	}
	for path, want := range found {
		if got, err := f.n.GetClosestVolumeIDFromTargetPath(ctx, path); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", path, got, err, want)
		}
	}
	faults := map[string]string{
		`C:\loop\a\x`: `finding the volume of C:\loop\a\x: no volume found within 256 steps: the links on the way may form a loop`,
		`C:\k\share`:  `finding the volume of C:\k\share: C:\k\share links to \\srv\share\, which is not a local path`,
		`C:\k\bad\x`: `finding the volume of C:\k\bad\x: the reparse point at C:\k\bad is malformed: ` +
			`REPARSE_DATA_BUFFER: header at offset 0: 3 bytes were returned, the header takes 8 (truncated answer)`,
		`D:\data`:            `finding the volume of D:\data: GetVolumeNameForVolumeMountPointW D:\: The file or directory is not a reparse point.`,
		`relative\path`:      `finding the volume of relative\path: it is not an absolute local path (C:\... or \\?\Volume{GUID}\...)`,
		`\\srv\share\x`:      `finding the volume of \\srv\share\x: it is not an absolute local path (C:\... or \\?\Volume{GUID}\...)`,
		`\\.\PhysicalDrive0`: `finding the volume of \\.\PhysicalDrive0: it is not an absolute local path (C:\... or \\?\Volume{GUID}\...)`,
	}
	for path, want := range faults {
		got, err := f.n.GetClosestVolumeIDFromTargetPath(ctx, path)
		if err == nil || err.Error() != want || got != "" {
			t.Errorf("%s: %q, %v\nwant %q", path, got, err, want)
		}
	}
	steps := 0
	for _, c := range f.host.Calls() {
		if c.Path == `C:\loop\a` || c.Path == `C:\loop\b` {
			steps++
		}
	}
	if steps != 255 {
		t.Errorf("the loop was read %d times, want 255 (256 steps, the first on C:\\loop\\a\\x)", steps)
	}
}

func TestNativePaths(t *testing.T) {
	parents := map[string]string{
		`C:\a\b`: `C:\a`, `C:\a\b\`: `C:\a`, `C:\a`: `C:\`, `c:\a`: `C:\`, `C:/a/b`: `C:\a`,
		`\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\a`: `\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\`,
		`\\?\C:\a\b`: `C:\a`,
	}
	for p, want := range parents {
		if got, ok := parentDir(p); !ok || got != want {
			t.Errorf("parentDir(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	for _, p := range []string{`C:\`, `C:`, `C:a`, `\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\`, `\\srv\share`, `a\b`, ``,
		`\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}x\a`, `\\?\Volume{bbbb}\a`} {
		if got, ok := parentDir(p); ok {
			t.Errorf("parentDir(%q) = %q, want none", p, got)
		}
	}
	targets := map[[2]string]string{ // link, relative target
		{`C:\k\link`, `..\..\x`}:       `C:\x`,
		{`C:\k\link`, `..\..\..\..\x`}: `C:\x`,
		{`C:\k\p\link`, `.\a\..\b`}:    `C:\k\p\b`,
		{`C:\k\link`, `\y\z`}:          `C:\y\z`,
		{`C:\k\link`, `D:\y\..\z`}:     `D:\z`,
		{`D:\k\link`, `\\?\C:\y`}:      `C:\y`,
		{`C:\k\link`, `\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\q`}: `\\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\q`,
	}
	for in, want := range targets {
		if got, ok := resolveTarget(in[0], in[1], true); !ok || got != want {
			t.Errorf("resolveTarget(%q, %q) = %q, %v; want %q", in[0], in[1], got, ok, want)
		}
	}
	for _, target := range []string{`\\srv\share`, `D:rel`, `\\.\pipe\x`} {
		if got, ok := resolveTarget(`C:\k\link`, target, true); ok {
			t.Errorf("resolveTarget to %q = %q, want not local", target, got)
		}
	}
	// A junction or an absolute link holds no relative path.
	for _, target := range []string{`UNC\srv\share\`, `k\x`, `\k\x`} {
		if got, ok := resolveTarget(`C:\k\link`, target, false); ok {
			t.Errorf("resolveTarget to %q, not relative, = %q, want not local", target, got)
		}
	}
}
