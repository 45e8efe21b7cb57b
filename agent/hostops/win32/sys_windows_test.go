package win32_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/platform"
)

// These tests call Windows itself through win32.New(). Under Wine, what
// Wine implements runs (the volume of C:, its file system, free space,
// the volume list, file attributes); what it does not skips with Wine's
// answer.

func realVolumeOfC(t *testing.T) (win32.Sys, string) {
	t.Helper()
	sys := win32.New()
	v, err := sys.VolumeNameForMountPoint(`C:\`)
	if err != nil {
		t.Fatalf(`VolumeNameForMountPoint(C:\): %v`, err)
	}
	if !win32.IsVolumeName(v) || !strings.HasSuffix(v, `\`) {
		t.Fatalf(`VolumeNameForMountPoint(C:\) = %q, not \\?\Volume{GUID}\`, v)
	}
	return sys, v
}

// wineCannot skips a test whose call Wine does not implement, saying what
// it answered; on Windows the failure stands.
func wineCannot(t *testing.T, what string, err error) {
	t.Helper()
	if platform.UnderWine() {
		t.Skipf("Wine cannot run %s: it answers %v", what, err)
	}
	t.Fatalf("%s: %v", what, err)
}

func TestRealVolumeOfC(t *testing.T) {
	sys, v := realVolumeOfC(t)
	fs, err := sys.FileSystemName(v)
	if err != nil || fs == "" {
		t.Fatalf("FileSystemName(%s) = %q, %v", v, fs, err)
	}
	t.Logf(`C:\ is %s, %s`, v, fs)
	vols, err := sys.Volumes()
	if err != nil {
		t.Fatalf("Volumes: %v", err)
	}
	if !slices.ContainsFunc(vols, func(s string) bool { return strings.EqualFold(s, v) }) {
		t.Fatalf("Volumes() = %v, without C:'s %s", vols, v)
	}
	for _, s := range vols {
		if !win32.IsVolumeName(s) {
			t.Errorf("Volumes() lists %q, not a volume GUID path", s)
		}
	}
}

func TestRealFreeSpace(t *testing.T) {
	sys, v := realVolumeOfC(t)
	for _, p := range []string{`C:\`, v} {
		total, free, err := sys.FreeSpace(p)
		if err != nil {
			t.Fatalf("FreeSpace(%s): %v", p, err)
		}
		if total == 0 || free > total {
			t.Fatalf("FreeSpace(%s) = %d free of %d", p, free, total)
		}
	}
	_, _, err := sys.FreeSpace(`C:\no\such\dir\`)
	if !errors.Is(err, win32.ErrNotFound) {
		t.Fatalf(`FreeSpace of a missing folder: %v, want ErrNotFound`, err)
	}
}

func TestRealFlushVolume(t *testing.T) {
	sys, v := realVolumeOfC(t)
	if err := sys.FlushVolume(v); err != nil {
		if !platform.UnderWine() && strings.Contains(err.Error(), "Access is denied") {
			t.Skipf("flushing a volume needs administrator rights: %v", err)
		}
		wineCannot(t, "FlushFileBuffers on a volume", err)
	}
}

func TestRealFileExists(t *testing.T) {
	sys := win32.New()
	dir := t.TempDir()
	if ok, err := sys.FileExists(dir); !ok || err != nil {
		t.Fatalf("FileExists(%s) = %v, %v", dir, ok, err)
	}
	if ok, err := sys.FileExists(filepath.Join(dir, "missing", "x")); ok || err != nil {
		t.Fatalf("FileExists of a missing path = %v, %v; want false, nil", ok, err)
	}
	if ok, err := sys.FileExists("C:\\x\x00y"); ok || err != nil {
		t.Fatalf("FileExists of a path holding a NUL = %v, %v", ok, err)
	}
}

func TestRealReparsePoints(t *testing.T) {
	sys := win32.New()
	dir := t.TempDir()
	if _, err := sys.ReadReparsePoint(dir); !errors.Is(err, win32.ErrNotReparsePoint) {
		wineCannot(t, "FSCTL_GET_REPARSE_POINT on a plain folder", err)
	}
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := sys.Symlink(target+`\`, link); err != nil {
		if !platform.UnderWine() && strings.Contains(err.Error(), "privilege") {
			t.Skipf("creating a symbolic link needs SeCreateSymbolicLinkPrivilege or Developer Mode: %v", err)
		}
		wineCannot(t, "CreateSymbolicLinkW", err)
	}
	data, err := sys.ReadReparsePoint(link)
	if err != nil {
		wineCannot(t, "FSCTL_GET_REPARSE_POINT on a symbolic link", err)
	}
	rp, err := win32.ParseReparsePoint(data)
	if err != nil {
		t.Fatalf("the link's REPARSE_DATA_BUFFER: %v (%x)", err, data)
	}
	if rp.Tag != win32.IO_REPARSE_TAG_SYMLINK || !strings.EqualFold(rp.SubstituteName, `\??\`+target+`\`) {
		t.Fatalf("the link reads %+v, want a symbolic link to %s", rp, `\??\`+target+`\`)
	}
}

func TestRealDiskIOCTLs(t *testing.T) {
	sys := win32.New()
	drives, err := sys.PhysicalDrives()
	if err != nil {
		t.Fatalf("PhysicalDrives: %v", err)
	}
	if len(drives) == 0 {
		if platform.UnderWine() {
			t.Skip("Wine cannot run the disk IOCTLs: it has no \\\\.\\PhysicalDriveN device (QueryDosDeviceW lists none)")
		}
		t.Fatal("no \\\\.\\PhysicalDriveN device listed")
	}
	d := win32.PhysicalDrive(drives[0])
	t.Logf("disks %v", drives)
	t.Run("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceProperty", func(t *testing.T) {
		q := win32.StoragePropertyQuery(win32.StorageDeviceProperty, win32.PropertyStandardQuery)
		out, err := sys.DeviceIoControl(d, win32.IOCTL_STORAGE_QUERY_PROPERTY, q, 1024)
		if err != nil {
			wineCannot(t, "IOCTL_STORAGE_QUERY_PROPERTY", err)
		}
		desc, err := win32.ParseStorageDeviceDescriptor(out)
		if err != nil {
			t.Fatalf("%s's STORAGE_DEVICE_DESCRIPTOR: %v", d, err)
		}
		t.Logf("%s: %+v", d, desc)
	})
	t.Run("IOCTL_STORAGE_QUERY_PROPERTY StorageDeviceIdProperty", func(t *testing.T) {
		q := win32.StoragePropertyQuery(win32.StorageDeviceIdProperty, win32.PropertyStandardQuery)
		out, err := sys.DeviceIoControl(d, win32.IOCTL_STORAGE_QUERY_PROPERTY, q, 4096)
		if err != nil {
			wineCannot(t, "IOCTL_STORAGE_QUERY_PROPERTY for StorageDeviceIdProperty", err)
		}
		t.Logf("%s: STORAGE_DEVICE_ID_DESCRIPTOR %x", d, out)
	})
	t.Run("IOCTL_SCSI_GET_ADDRESS", func(t *testing.T) {
		out, err := sys.DeviceIoControl(d, win32.IOCTL_SCSI_GET_ADDRESS, nil, win32.SCSIAddressSize)
		if errors.Is(err, win32.ErrNotSupported) && !platform.UnderWine() {
			t.Skipf("%s is on no SCSI port: %v", d, err)
		}
		if err != nil {
			wineCannot(t, "IOCTL_SCSI_GET_ADDRESS", err)
		}
		a, err := win32.ParseSCSIAddress(out)
		if err != nil {
			t.Fatalf("%s's SCSI_ADDRESS: %v", d, err)
		}
		t.Logf("%s: %+v", d, a)
	})
	t.Run("IOCTL_DISK_GET_LENGTH_INFO", func(t *testing.T) {
		out, err := sys.DeviceIoControl(d, win32.IOCTL_DISK_GET_LENGTH_INFO, nil, win32.GetLengthInformationSize)
		if err != nil && !platform.UnderWine() && strings.Contains(err.Error(), "Access is denied") {
			t.Skipf("opening a disk for reading needs administrator rights: %v", err)
		}
		if err != nil {
			wineCannot(t, "IOCTL_DISK_GET_LENGTH_INFO", err)
		}
		n, err := win32.ParseLengthInformation(out)
		if err != nil {
			t.Fatalf("%s's GET_LENGTH_INFORMATION: %v", d, err)
		}
		t.Logf("%s: %d bytes", d, n)
	})
}

func TestRealVolumeIOCTLs(t *testing.T) {
	sys, v := realVolumeOfC(t)
	out, err := sys.DeviceIoControl(win32.VolumeDevice(v), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, win32.VolumeDiskExtentsBufferSize(8))
	if err != nil {
		wineCannot(t, "IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS", err)
	}
	ext, err := win32.ParseVolumeDiskExtents(out)
	if err != nil {
		t.Fatalf("C:'s VOLUME_DISK_EXTENTS: %v (%x)", err, out)
	}
	if len(ext) == 0 && platform.UnderWine() {
		t.Skipf("Wine cannot tell where a volume lies: IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS answers no extent for C: (%x)", out)
	}
	if len(ext) == 0 {
		t.Fatalf("C: lies on no disk extent (%x)", out)
	}
	t.Logf("C: lies on %+v", ext)
}

func TestRealMountPoints(t *testing.T) {
	if platform.UnderWine() {
		t.Skip("Wine cannot mount a volume in a folder (SetVolumeMountPointW) or remove it (DeleteVolumeMountPointW)")
	}
	t.Skip("mounting needs a spare volume and administrator rights: run on a Windows node by hand")
}
