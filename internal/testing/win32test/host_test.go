package win32test_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

const (
	vol1 = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
	vol2 = `\\?\Volume{00000000-1111-2222-3333-444444444444}\`
)

func host() *win32test.Host {
	h := win32test.New()
	h.AddDisk(win32test.Disk{Number: 1, SCSI: &win32.SCSIAddress{PortNumber: 3, Lun: 2}, Serial: "SN1", Size: 1 << 30})
	h.AddVolume(win32test.Volume{ID: vol1, Extents: []win32.DiskExtent{{DiskNumber: 1, StartingOffset: 1 << 20, ExtentLength: 1 << 29}},
		PartitionNumber: 2, FileSystem: "NTFS", Total: 1000, Free: 400})
	h.AddDrive(`C:\`, vol2)
	return h
}

func TestMountPoints(t *testing.T) {
	h := host()
	if err := h.SetMountPoint(`C:\mnt\x\`, vol1); err != nil {
		t.Fatal(err)
	}
	if got := h.MountPoints(); !reflect.DeepEqual(got, map[string]string{`C:\mnt\x\`: vol1}) {
		t.Fatalf("MountPoints = %v", got)
	}
	if v, err := h.VolumeNameForMountPoint(`c:\MNT\x\`); err != nil || v != vol1 {
		t.Fatalf("VolumeNameForMountPoint = %q, %v", v, err)
	}
	if v, err := h.VolumeNameForMountPoint(`C:\`); err != nil || v != vol2 {
		t.Fatalf("the drive root: %q, %v", v, err)
	}
	data, err := h.ReadReparsePoint(`C:\mnt\x`)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := win32.ParseReparsePoint(data)
	want := win32.ReparsePoint{Tag: win32.IO_REPARSE_TAG_MOUNT_POINT, SubstituteName: `\??\Volume{452e318a-5cde-421e-9831-b9853c521012}\`}
	if err != nil || rp != want {
		t.Fatalf("the mount point's reparse data: %+v, %v", rp, err)
	}
	if total, free, err := h.FreeSpace(`C:\mnt\x\`); err != nil || total != 1000 || free != 400 {
		t.Fatalf("FreeSpace through the mount point: %d, %d, %v", total, free, err)
	}
	errs := map[string]struct {
		err  error
		want string
	}{
		"mounted twice":        {h.SetMountPoint(`C:\mnt\x\`, vol1), `SetVolumeMountPointW C:\mnt\x\: The directory is not empty.`},
		"no trailing \\":       {h.SetMountPoint(`C:\mnt\y`, vol1), `SetVolumeMountPointW C:\mnt\y: The filename, directory name, or volume label syntax is incorrect.`},
		"unknown volume":       {h.SetMountPoint(`C:\mnt\y\`, `\\?\Volume{99999999-1111-2222-3333-444444444444}\`), `SetVolumeMountPointW C:\mnt\y\: The system cannot find the file specified.`},
		"root is no reparse":   {func() error { _, err := h.ReadReparsePoint(`C:\`); return err }(), `DeviceIoControl(FSCTL_GET_REPARSE_POINT) C:\: The file or directory is not a reparse point.`},
		"not a mount point":    {h.DeleteMountPoint(`C:\mnt\y\`), `DeleteVolumeMountPointW C:\mnt\y\: The file or directory is not a reparse point.`},
		"name without \\":      {func() error { _, err := h.VolumeNameForMountPoint(`C:`); return err }(), `GetVolumeNameForVolumeMountPointW C:: The parameter is incorrect.`},
		"unknown volume flush": {h.FlushVolume(vol2), `CreateFileW \\?\Volume{00000000-1111-2222-3333-444444444444}: The system cannot find the file specified.`},
	}
	for name, tc := range errs {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %q", name, tc.err, tc.want)
		}
	}
	if err := h.DeleteMountPoint(`C:\mnt\x\`); err != nil {
		t.Fatal(err)
	}
	if len(h.MountPoints()) != 0 {
		t.Fatalf("still mounted: %v", h.MountPoints())
	}
	if _, err := h.ReadReparsePoint(`C:\mnt\x`); !errors.Is(err, win32.ErrNotReparsePoint) {
		t.Fatalf("after DeleteMountPoint: %v", err)
	}
}

func TestDeviceIoControlAnswersAsWindows(t *testing.T) {
	h := host()
	h.AddVolume(win32test.Volume{ID: vol2, Extents: []win32.DiskExtent{{DiskNumber: 1}, {DiskNumber: 4}}})
	dev1, dev2 := win32.VolumeDevice(vol1), win32.VolumeDevice(vol2)
	out, err := h.DeviceIoControl(dev1, win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, 1024)
	if ext, perr := win32.ParseVolumeDiskExtents(out); err != nil || perr != nil || len(ext) != 1 || ext[0].DiskNumber != 1 {
		t.Fatalf("extents: %v, %v, %v", ext, err, perr)
	}
	out, err = h.DeviceIoControl(dev2, win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, win32.VolumeDiskExtentsSize)
	if n, _ := win32.NumberOfDiskExtents(out); !errors.Is(err, win32.ErrBufferTooSmall) || n != 2 || len(out) != 32 {
		t.Fatalf("two extents in a buffer for one: %d bytes, %d extents, %v", len(out), n, err)
	}
	if _, err := h.DeviceIoControl(dev2, win32.IOCTL_STORAGE_GET_DEVICE_NUMBER, nil, 12); !errors.Is(err, win32.ErrNotSupported) {
		t.Fatalf("a spanned volume's partition number: %v", err)
	}
	out, err = h.DeviceIoControl(dev1, win32.IOCTL_STORAGE_GET_DEVICE_NUMBER, nil, 12)
	if n, perr := win32.ParseStorageDeviceNumber(out); err != nil || perr != nil || n.DeviceNumber != 1 || n.PartitionNumber != 2 {
		t.Fatalf("partition number: %+v, %v, %v", n, err, perr)
	}
	disk := win32.PhysicalDrive(1)
	if _, err := h.DeviceIoControl(disk, win32.IOCTL_SCSI_GET_ADDRESS, nil, 7); err == nil ||
		err.Error() != `DeviceIoControl(IOCTL_SCSI_GET_ADDRESS) \\.\PhysicalDrive1: The data area passed to a system call is too small.` {
		t.Fatalf("a SCSI_ADDRESS in 7 bytes: %v", err)
	}
	q := win32.StoragePropertyQuery(win32.StorageDeviceProperty, win32.PropertyStandardQuery)
	out, err = h.DeviceIoControl(disk, win32.IOCTL_STORAGE_QUERY_PROPERTY, q, 8)
	if size, _ := win32.DescriptorSize(out); err != nil || len(out) != 8 || size != 44 {
		t.Fatalf("a descriptor cut to 8 bytes: %x, %v", out, err)
	}
	// A disk given only its SCSI address is a SCSI disk; one given a bus
	// type answers it; one with neither is of an unknown bus.
	h.AddDisk(win32test.Disk{Number: 2, Bus: win32.BusTypeSata, SCSI: &win32.SCSIAddress{}})
	h.AddDisk(win32test.Disk{Number: 3})
	for d, want := range map[uint32]win32.StorageBusType{1: win32.BusTypeScsi, 2: win32.BusTypeSata, 3: win32.BusTypeUnknown} {
		out, err := h.DeviceIoControl(win32.PhysicalDrive(d), win32.IOCTL_STORAGE_QUERY_PROPERTY, q, 1024)
		if id, perr := win32.ParseStorageDeviceIdentity(out); err != nil || perr != nil || id.BusType != want {
			t.Errorf("disk %d: bus type %v, %v, %v; want %v", d, id.BusType, err, perr, want)
		}
	}
	if _, err := h.DeviceIoControl(disk, win32.IOCTL_STORAGE_QUERY_PROPERTY,
		win32.StoragePropertyQuery(win32.StorageDeviceIdProperty, win32.PropertyStandardQuery), 4096); !errors.Is(err, win32.ErrNotSupported) {
		t.Fatalf("a disk without page 83 data: %v", err)
	}
	if _, err := h.DeviceIoControl(win32.PhysicalDrive(9), win32.IOCTL_SCSI_GET_ADDRESS, nil, 8); err == nil ||
		err.Error() != `CreateFileW \\.\PhysicalDrive9: The system cannot find the file specified.` {
		t.Fatalf("an unknown disk: %v", err)
	}
	h.Answer(disk, win32.IOCTL_DISK_GET_LENGTH_INFO, []byte{1, 2, 3}, nil)
	if out, err := h.DeviceIoControl(disk, win32.IOCTL_DISK_GET_LENGTH_INFO, nil, 8); err != nil || len(out) != 3 {
		t.Fatalf("a canned answer: %x, %v", out, err)
	}
}

func TestBeforeAndReal(t *testing.T) {
	real := win32test.New()
	real.AddVolume(win32test.Volume{ID: vol2, FileSystem: "NTFS", Total: 10, Free: 1})
	h := host()
	h.Real = real
	if fs, err := h.FileSystemName(vol2); err != nil || fs != "NTFS" {
		t.Fatalf("a volume only Real knows: %q, %v", fs, err)
	}
	if vols, err := h.Volumes(); err != nil || !reflect.DeepEqual(vols, []string{vol1, vol2}) {
		t.Fatalf("Volumes with Real: %v, %v", vols, err)
	}
	if err := h.FlushVolume(vol2); err != nil || real.Flushes(vol2) != 1 || h.Flushes(vol1) != 0 {
		t.Fatalf("flush through Real: %v", err)
	}
	if _, err := h.DeviceIoControl(`\\.\PhysicalDrive7`, win32.IOCTL_SCSI_GET_ADDRESS, nil, 8); err == nil || real.Calls()[len(real.Calls())-1].Path != `\\.\PhysicalDrive7` {
		t.Fatalf("an unknown device did not reach Real: %v", err)
	}
	boom := errors.New("injected")
	h.Before = func(c win32test.Call) error {
		if c.Func == "GetDiskFreeSpaceExW" {
			return boom
		}
		return nil
	}
	if _, _, err := h.FreeSpace(vol1); err != boom {
		t.Fatalf("Before's error was not the answer: %v", err)
	}
	if err := h.Symlink(`\\srv\share\`, `C:\pod\link`); err != nil {
		t.Fatal(err)
	}
	data, _ := h.ReadReparsePoint(`C:\pod\link`)
	rp, err := win32.ParseReparsePoint(data)
	if err != nil || rp.SubstituteName != `\??\UNC\srv\share\` || rp.PrintName != `\\srv\share\` {
		t.Fatalf("the link: %+v, %v", rp, err)
	}
	if err := h.Symlink(`C:\x`, `C:\pod\link`); err == nil || err.Error() != `CreateSymbolicLinkW C:\pod\link: Cannot create a file when that file already exists.` {
		t.Fatalf("linking twice: %v", err)
	}
	if ok, err := h.FileExists(`C:\pod\link`); !ok || err != nil {
		t.Fatalf("FileExists of the link: %v, %v", ok, err)
	}
}

// The host serves calls from many goroutines at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	h := host()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mp := fmt.Sprintf(`C:\mnt\%d\`, i)
			for range 50 {
				if err := h.SetMountPoint(mp, vol1); err != nil {
					t.Error(err)
					return
				}
				_, _ = h.VolumeNameForMountPoint(mp)
				_, _ = h.DeviceIoControl(win32.VolumeDevice(vol1), win32.IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, nil, 64)
				_, _ = h.Volumes()
				_ = h.FlushVolume(vol1)
				if err := h.DeleteMountPoint(mp); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if h.Flushes(vol1) != 16*50 || len(h.MountPoints()) != 0 {
		t.Fatalf("%d flushes, mount points %v", h.Flushes(vol1), h.MountPoints())
	}
}
