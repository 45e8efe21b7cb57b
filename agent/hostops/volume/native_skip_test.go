package volume

import (
	"context"
	"reflect"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// One volume of each unreadable kind is left out of ListVolumesOnDisk, told
// to Skipped with the volume and the fault, and the others are listed.
func TestListVolumesOnDiskSkipsOddVolumes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var got []string
	f.n.Skipped = func(listing string, err error) { got = append(got, listing+": "+err.Error()) }
	const (
		volGarbage = `\\?\Volume{11111111-0000-0000-0000-000000000001}\`
		volShort   = `\\?\Volume{22222222-0000-0000-0000-000000000002}\`
		volDenied  = `\\?\Volume{33333333-0000-0000-0000-000000000003}\`
	)
	ext := []win32.DiskExtent{{DiskNumber: 1, StartingOffset: 9 << 30, ExtentLength: 1 << 20}}
	for _, v := range []string{volGarbage, volShort, volDenied} {
		f.host.AddVolume(win32test.Volume{ID: v, Extents: ext, PartitionNumber: 9})
	}
	f.host.AddVolume(win32test.Volume{ID: `\\?\GLOBALROOT\Device\X\`})
	f.host.Answer(win32.VolumeDevice(volGarbage), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, []byte{1}, nil)
	f.host.Answer(win32.VolumeDevice(volShort), win32.IOCTL_STORAGE_GET_DEVICE_NUMBER, make([]byte, 8), nil)
	f.host.Answer(win32.VolumeDevice(volDenied), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil,
		win32test.Fail("CreateFileW", win32.VolumeDevice(volDenied), win32test.ErrAccessDenied))

	vols, err := f.n.ListVolumesOnDisk(ctx, 1, 0)
	if want := []string{volB, volA, volSpan}; err != nil || !reflect.DeepEqual(vols, want) {
		t.Fatalf("ListVolumesOnDisk = %v, %v\nwant %v", vols, err, want)
	}
	want := []string{
		`ListVolumesOnDisk: listing the volumes on disk 1: volume \\?\Volume{11111111-0000-0000-0000-000000000001}\: VOLUME_DISK_EXTENTS: NumberOfDiskExtents at offset 0: 1 bytes were returned, the field takes 4 (truncated answer)`,
		`ListVolumesOnDisk: listing the volumes on disk 1: volume \\?\Volume{22222222-0000-0000-0000-000000000002}\: STORAGE_DEVICE_NUMBER: length at offset 0: 8 bytes were returned, the structure takes 12 (truncated answer)`,
		`ListVolumesOnDisk: listing the volumes on disk 1: volume \\?\Volume{33333333-0000-0000-0000-000000000003}\: CreateFileW \\?\Volume{33333333-0000-0000-0000-000000000003}: Access is denied.`,
		`ListVolumesOnDisk: listing the volumes on disk 1: FindNextVolumeW listed "\\\\?\\GLOBALROOT\\Device\\X\\", which is not a volume GUID path`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Skipped was told\n%q\nwant\n%q", got, want)
	}

	// A volume list that cannot be read at all fails the call.
	f.host.Before = func(c win32test.Call) error {
		if c.Func == "FindFirstVolumeW" {
			return win32test.Fail(c.Func, "", win32test.ErrAccessDenied)
		}
		return nil
	}
	if _, err := f.n.ListVolumesOnDisk(ctx, 1, 0); err == nil || err.Error() != `listing the volumes on disk 1: FindFirstVolumeW: Access is denied.` {
		t.Fatalf("an unreadable volume list: %v", err)
	}
}

// Mounting a volume where it is already mounted succeeds, as in CSI Proxy;
// a folder holding another volume refuses the mount, naming that volume.
func TestMountVolumeWhereItIsMounted(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 2 {
		if err := f.n.MountVolume(ctx, volA, `C:\k\staging`); err != nil {
			t.Fatalf("mount %d: %v", i+1, err)
		}
	}
	// The volume id's case does not matter.
	if err := f.n.MountVolume(ctx, `\\?\Volume{AAAAAAAA-0000-0000-0000-000000000001}\`, `C:\k\staging\`); err != nil {
		t.Fatalf("the same volume in upper case: %v", err)
	}
	if mps := f.host.MountPoints(); len(mps) != 1 {
		t.Fatalf("mount points %v, want one", mps)
	}
	err := f.n.MountVolume(ctx, volB, `C:\k\staging`)
	want := `mounting volume \\?\Volume{bbbbbbbb-0000-0000-0000-000000000002}\ at C:\k\staging: SetVolumeMountPointW C:\k\staging\: The directory is not empty. ` +
		`(the folder is the mount point of volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\; unmount it first)`
	if err == nil || err.Error() != want {
		t.Fatalf("another volume: %v\nwant %q", err, want)
	}
	// A folder that is no mount point and refuses the mount keeps the
	// mount's error alone.
	f.host.SetReparseData(`C:\k\linked\`, win32test.SymlinkReparse(`\??\C:\x`, `C:\x`, 0))
	err = f.n.MountVolume(ctx, volA, `C:\k\linked`)
	want = `mounting volume \\?\Volume{aaaaaaaa-0000-0000-0000-000000000001}\ at C:\k\linked: SetVolumeMountPointW C:\k\linked\: The directory is not empty.`
	if err == nil || err.Error() != want {
		t.Fatalf("a link: %v\nwant %q", err, want)
	}
}
