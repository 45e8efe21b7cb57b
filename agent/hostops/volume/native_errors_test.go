package volume

import (
	"context"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// What the user reads when a volume is missing or Windows answers with
// bytes that do not hold the documented structure.
func TestNativeErrors(t *testing.T) {
	ctx := context.Background()
	extentsOp := win32.DeviceIoControlFunc(win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS)
	two := win32test.VolumeDiskExtents(win32.DiskExtent{DiskNumber: 1}, win32.DiskExtent{DiskNumber: 2})
	cases := map[string]struct {
		setup func(f fixture)
		call  func(n Native) error
		want  string
	}{
		"stats of a missing volume": {
			call: func(n Native) error { _, _, err := n.GetVolumeStats(ctx, missing); return err },
			want: `reading the size of volume \\?\Volume{99999999-9999-9999-9999-999999999999}\: GetDiskFreeSpaceExW \\?\Volume{99999999-9999-9999-9999-999999999999}\: The system cannot find the file specified.`,
		},
		"disk of a missing volume": {
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, missing); return err },
			want: `finding the disk of volume \\?\Volume{99999999-9999-9999-9999-999999999999}\: CreateFileW \\?\Volume{99999999-9999-9999-9999-999999999999}: The system cannot find the file specified.`,
		},
		"file system of a missing volume": {
			call: func(n Native) error { _, err := n.IsVolumeFormatted(ctx, missing); return err },
			want: `reading the file system of volume \\?\Volume{99999999-9999-9999-9999-999999999999}\: GetVolumeInformationW \\?\Volume{99999999-9999-9999-9999-999999999999}\: The system cannot find the file specified.`,
		},
		"mounting a missing volume": {
			call: func(n Native) error { return n.MountVolume(ctx, missing, `C:\mnt`) },
			want: `mounting volume \\?\Volume{99999999-9999-9999-9999-999999999999}\ at C:\mnt: SetVolumeMountPointW C:\mnt\: The system cannot find the file specified.`,
		},
		"unmounting what is not mounted": {
			call: func(n Native) error { return n.UnmountVolume(ctx, volA, `C:\mnt`) },
			want: `unmounting volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\ from C:\mnt: GetVolumeNameForVolumeMountPointW C:\mnt\: The file or directory is not a reparse point.`,
		},
		"flushing a missing volume": {
			call: func(n Native) error { return n.WriteVolumeCache(ctx, missing) },
			want: `flushing the cache of volume \\?\Volume{99999999-9999-9999-9999-999999999999}\: CreateFileW \\?\Volume{99999999-9999-9999-9999-999999999999}: The system cannot find the file specified.`,
		},
		"truncated extents": {
			setup: func(f fixture) {
				f.host.Answer(win32.VolumeDevice(volA), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, two[:20], nil)
			},
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, volA); return err },
			want: `finding the disk of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\: VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 2 extents take 56 bytes, 20 were returned (truncated answer)`,
		},
		"no extents": {
			setup: func(f fixture) {
				f.host.Answer(win32.VolumeDevice(volA), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, win32test.VolumeDiskExtents(), nil)
			},
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, volA); return err },
			want: `finding the disk of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\: Windows reports no disk extent for it, so it lies on no disk`,
		},
		"extents that keep growing": {
			setup: func(f fixture) {
				f.host.Answer(win32.VolumeDevice(volA), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, two[:32],
					win32test.Fail(extentsOp, win32.VolumeDevice(volA), win32test.ErrMoreData))
			},
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, volA); return err },
			want: `finding the disk of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\: the volume's disk extents no longer fit in 56 bytes, the size its first answer asked for (they changed between two calls; try again): ` +
				`DeviceIoControl(IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS) \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}: More data is available.`,
		},
		"a hostile extent count": {
			setup: func(f fixture) {
				f.host.Answer(win32.VolumeDevice(volA), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, []byte{0xff, 0xff, 0xff, 0xff},
					win32test.Fail(extentsOp, win32.VolumeDevice(volA), win32test.ErrMoreData))
			},
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, volA); return err },
			want: `finding the disk of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\: DeviceIoControl(IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS) says the volume has 4294967295 disk extents, more than the 4096 a volume can have`,
		},
		"more free than total": {
			setup: func(f fixture) { f.host.AddVolume(win32test.Volume{ID: volB, Total: 10, Free: 11}) },
			call:  func(n Native) error { _, _, err := n.GetVolumeStats(ctx, volB); return err },
			want:  `reading the size of volume \\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\: GetDiskFreeSpaceExW answered 11 bytes free of 10, which cannot be`,
		},
		"a size past int64": {
			setup: func(f fixture) { f.host.AddVolume(win32test.Volume{ID: volB, Total: 1 << 63}) },
			call:  func(n Native) error { _, _, err := n.GetVolumeStats(ctx, volB); return err },
			want:  `reading the size of volume \\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\: GetDiskFreeSpaceExW answered 0 bytes free of 9223372036854775808, which cannot be`,
		},
		"a flush that fails keeps the mount point": {
			setup: func(f fixture) {
				if err := f.n.MountVolume(ctx, volA, `C:\mnt`); err != nil {
					t.Fatal(err)
				}
				f.host.Before = func(c win32test.Call) error {
					if c.Func == "FlushFileBuffers" {
						return win32test.Fail(c.Func, c.Path, win32test.ErrAccessDenied)
					}
					return nil
				}
			},
			call: func(n Native) error {
				err := n.UnmountVolume(ctx, volA, `C:\mnt`)
				if _, e := n.GetVolumeIDFromTargetPath(ctx, `C:\mnt`); e != nil {
					t.Errorf("the mount point is gone: %v", e)
				}
				return err
			},
			want: `unmounting volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\ from C:\mnt: the volume's cache was not flushed, so it stays mounted: FlushFileBuffers \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}: Access is denied.`,
		},
		"an id that is no volume": {
			call: func(n Native) error { _, err := n.GetDiskNumberFromVolumeID(ctx, `\\.\PhysicalDrive0`); return err },
			want: `"\\\\.\\PhysicalDrive0" is not a volume id of the form \\?\Volume{GUID}\; the call was not run`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := tc.call(f.n)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("%v\nwant %q", err, tc.want)
			}
			if calls, queries := f.wmi.Calls(), f.wmi.Queries(); len(calls) != 0 || len(queries) != 0 {
				t.Fatalf("went through WMI: calls %v, queries %q", calls, queries)
			}
		})
	}
}

// Volumes that answer no extents (a DVD drive), have no medium, or went
// away since they were listed are left out of a listing.
func TestNativeListSkipsVolumesWithoutExtents(t *testing.T) {
	f := newFixture(t)
	vol := func(i int) string {
		return `\\?\Volume{12345678-0000-0000-0000-00000000000` + string(rune('0'+i)) + `}\`
	}
	for i, e := range []win32test.Errno{win32test.ErrNotSupported, {Code: 21, Text: "The device is not ready."}, win32test.ErrFileNotFound} {
		f.host.AddVolume(win32test.Volume{ID: vol(i)})
		f.host.Answer(win32.VolumeDevice(vol(i)), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil,
			win32test.Fail(win32.DeviceIoControlFunc(win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS), win32.VolumeDevice(vol(i)), e))
	}
	got, err := f.n.ListVolumesOnDisk(context.Background(), 2, 0)
	if err != nil || len(got) != 1 || got[0] != volC {
		t.Fatalf("ListVolumesOnDisk = %v, %v", got, err)
	}
}

// UnmountVolume with the id of one volume and the mount point of another
// leaves the other mounted: a caller cannot unmount what it did not name,
// whatever the case of the id it gives.
func TestUnmountLeavesAnotherVolumesMountPoint(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.n.MountVolume(ctx, volB, `C:\k\other`); err != nil {
		t.Fatal(err)
	}
	err := f.n.UnmountVolume(ctx, volA, `C:\k\other`)
	want := `unmounting volume ` + volA + ` from C:\k\other refused: the mount point holds volume ` + volB + `, not this one; nothing was unmounted`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %q", err, want)
	}
	if got := f.host.MountPoints(); len(got) != 1 {
		t.Fatalf("mount points %v, want volume B's still there", got)
	}
	if err := f.n.UnmountVolume(ctx, volB[:11]+strings.ToUpper(volB[11:]), `C:\k\other`); err != nil {
		t.Fatalf("unmounting the volume that is mounted: %v", err)
	}
	if got := f.host.MountPoints(); len(got) != 0 {
		t.Fatalf("mount points %v after unmounting, want none", got)
	}
}
