//go:build windows

package main

// The Win32 half of the fixture: Wine has no disks or volumes of a node to
// answer the disk and volume IOCTLs, and does not make volume mount points
// or symbolic links, so the fixture agent answers those from a JSON file
// describing the host, while every call the file does not cover still
// goes to Wine.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pipeguard/pipeguard/agent/hostops/disk"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// The environment of the fixture agent.
const (
	// fixtureEnv names the JSON file describing the host (fixtureFile).
	fixtureEnv = "PIPEGUARD_WIN32_FIXTURE"
	// fixtureLogEnv, when set, names a file every Win32 call is appended
	// to as a JSON line (callRecord): once as the fixture answered it,
	// and once more before it when the fixture passed it on to Wine.
	fixtureLogEnv = "PIPEGUARD_WIN32_FIXTURE_LOG"
	// maxFixtureSize bounds the fixture file.
	maxFixtureSize = 1 << 20
)

// fixtureFile is the host the fixture answers for. Paths are Windows
// paths; a volume is its volume GUID path, \\?\Volume{GUID}\.
type fixtureFile struct {
	// Disks are the host's \\.\PhysicalDriveN; QueryDosDeviceW lists
	// these alone.
	Disks []fixtureDisk `json:"disks"`
	// Volumes are added to those of Wine (FindFirstVolumeW).
	Volumes []fixtureVolume `json:"volumes"`
	// MountPoints mounts volumes of Volumes at folders: folder → volume.
	MountPoints map[string]string `json:"mountPoints"`
	// Links are directory symbolic links: link → target, read back as
	// CreateSymbolicLinkW would have written them.
	Links map[string]string `json:"links"`
	// Files are paths that exist (GetFileAttributesW), such as a share.
	Files []string `json:"files"`

	// The fields below are read by the WMI fixture alone
	// (wmi.go), which also makes MSFT_Disk, MSFT_Partition
	// and MSFT_Volume instances of Disks and Volumes.

	// SMBMappings are the host's SMB global mappings at the start.
	SMBMappings []fixtureSMBMapping `json:"smbMappings"`
	// ISCSIPortals are iSCSI target portals and the targets they lead to.
	ISCSIPortals []fixtureISCSIPortal `json:"iscsiPortals"`
	// WMIHolds are WMI methods that never answer: a call waits until its
	// context ends and then fails with the context's error, having done
	// nothing.
	WMIHolds []fixtureHold `json:"wmiHolds"`
}

// fixtureDisk is a disk, win32test.Disk.
type fixtureDisk struct {
	Number uint32 `json:"number"`
	// SCSI is its SCSI_ADDRESS; none: IOCTL_SCSI_GET_ADDRESS fails.
	SCSI *fixtureSCSI `json:"scsi"`
	// Page83 is its STORAGE_DEVICE_ID_DESCRIPTOR; none: the query fails
	// with ERROR_NOT_SUPPORTED.
	Page83  *fixturePage83 `json:"page83"`
	Vendor  string         `json:"vendor"`
	Product string         `json:"product"`
	Serial  string         `json:"serial"`
	Size    int64          `json:"size"`
	// PartitionStyle is its MSFT_Disk.PartitionStyle: "gpt" (the
	// default), "mbr" or "raw". The volumes of a raw disk are not in WMI
	// until a CreatePartition on the disk makes the partition holding
	// the first of them.
	PartitionStyle string `json:"partitionStyle"`
	// Offline is its MSFT_Disk.IsOffline.
	Offline bool `json:"offline"`
}

// fixtureSCSI is a SCSI_ADDRESS.
type fixtureSCSI struct {
	Port   uint8 `json:"port"`
	Path   uint8 `json:"path"`
	Target uint8 `json:"target"`
	LUN    uint8 `json:"lun"`
}

// fixturePage83 is a STORAGE_DEVICE_ID_DESCRIPTOR given by exactly one of
// its fields.
type fixturePage83 struct {
	// ASCII is one identifier of code set ASCII, type vendor ID, for the
	// device, e.g. "Google pvc-...".
	ASCII string `json:"ascii"`
	// NAA is one binary identifier of type NAA (StorageIdTypeFCPHName)
	// for the device, in hex.
	NAA string `json:"naa"`
	// Raw is the descriptor's bytes in hex, as they are, well-formed or not.
	Raw string `json:"raw"`
}

// fixtureVolume is a volume, win32test.Volume.
type fixtureVolume struct {
	ID         string          `json:"id"`
	Extents    []fixtureExtent `json:"extents"`
	Partition  uint32          `json:"partition"`
	FileSystem string          `json:"fileSystem"`
	Total      uint64          `json:"total"`
	Free       uint64          `json:"free"`
}

// fixtureExtent is a DISK_EXTENT.
type fixtureExtent struct {
	Disk   uint32 `json:"disk"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// loadWin32Fixture reads the file fixtureEnv names and returns the host it
// describes, passing what it does not know to Wine (win32.New).
func loadWin32Fixture() (win32.Sys, error) {
	path := os.Getenv(fixtureEnv)
	if path == "" {
		return nil, fmt.Errorf("this is a test build (test/wine/cmd/fixtureagent) whose Win32 calls go to a fixture, and %s is not set: set it to the fixture's JSON file, or run the shipped build", fixtureEnv)
	}
	f, err := readFixture(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", fixtureEnv, path, err)
	}
	var real win32.Sys = win32.New()
	var log *callLog
	if name := os.Getenv(fixtureLogEnv); name != "" {
		file, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: opening the call log: %w", fixtureLogEnv, err)
		}
		log = &callLog{w: file}
		real = recordedSys{sys: real, to: "wine", log: log}
	}
	h, err := f.host(real)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", fixtureEnv, path, err)
	}
	if log != nil {
		return recordedSys{sys: h, to: "fixture", log: log}, nil
	}
	return h, nil
}

// readFixture reads and decodes the fixture file: one JSON object of the
// fields of fixtureFile and no other, at most maxFixtureSize bytes.
func readFixture(path string) (fixtureFile, error) {
	var f fixtureFile
	file, err := os.Open(path)
	if err != nil {
		return f, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxFixtureSize+1))
	if err != nil {
		return f, err
	}
	if len(data) > maxFixtureSize {
		return f, fmt.Errorf("the file is larger than %d bytes", maxFixtureSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("decoding the JSON: %w", err)
	}
	if dec.More() {
		return f, errors.New("decoding the JSON: data after the object")
	}
	return f, nil
}

// host returns the win32test.Host f describes, real answering the rest.
func (f fixtureFile) host(real win32.Sys) (*win32test.Host, error) {
	h := win32test.New()
	h.Real = real
	disks := map[uint32]bool{}
	for i, d := range f.Disks {
		if disks[d.Number] {
			return nil, fmt.Errorf("disks[%d]: disk %d is given twice", i, d.Number)
		}
		disks[d.Number] = true
		wd, err := d.disk()
		if err != nil {
			return nil, fmt.Errorf("disks[%d] (disk %d): %w", i, d.Number, err)
		}
		h.AddDisk(wd)
	}
	volumes := map[string]bool{}
	for i, v := range f.Volumes {
		if !win32.IsVolumeName(v.ID) {
			return nil, fmt.Errorf(`volumes[%d]: id %q is not a volume GUID path \\?\Volume{GUID}\`, i, v.ID)
		}
		if volumes[strings.ToLower(win32.VolumeRoot(v.ID))] {
			return nil, fmt.Errorf("volumes[%d]: volume %s is given twice", i, v.ID)
		}
		volumes[strings.ToLower(win32.VolumeRoot(v.ID))] = true
		wv := win32test.Volume{ID: win32.VolumeRoot(v.ID), PartitionNumber: v.Partition, FileSystem: v.FileSystem, Total: v.Total, Free: v.Free}
		for j, e := range v.Extents {
			if e.Offset < 0 || e.Length < 0 {
				return nil, fmt.Errorf("volumes[%d].extents[%d]: offset %d and length %d must not be negative", i, j, e.Offset, e.Length)
			}
			wv.Extents = append(wv.Extents, win32.DiskExtent{DiskNumber: e.Disk, StartingOffset: e.Offset, ExtentLength: e.Length})
		}
		h.AddVolume(wv)
	}
	for folder, volume := range f.MountPoints {
		if !localPath(folder) {
			return nil, fmt.Errorf(`mountPoints: %q is not an absolute local folder (C:\...)`, folder)
		}
		if err := h.SetMountPoint(strings.TrimRight(folder, `\`)+`\`, win32.VolumeRoot(volume)); err != nil {
			return nil, fmt.Errorf("mountPoints: mounting %s at %s (give a volume of volumes): %w", volume, folder, err)
		}
	}
	for link, target := range f.Links {
		if !localPath(link) || target == "" {
			return nil, fmt.Errorf(`links: %q → %q: give an absolute local link path (C:\...) and a target`, link, target)
		}
		if err := h.Symlink(target, link); err != nil {
			return nil, fmt.Errorf("links: %s → %s: %w", link, target, err)
		}
	}
	for i, p := range f.Files {
		if p == "" {
			return nil, fmt.Errorf("files[%d] is empty", i)
		}
		h.AddFile(p)
	}
	return h, nil
}

// localPath tells whether p is an absolute path on a drive, C:\....
func localPath(p string) bool {
	return len(p) > 3 && p[1] == ':' && p[2] == '\\' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z')
}

// disk returns the win32test.Disk d describes.
func (d fixtureDisk) disk() (win32test.Disk, error) {
	if d.Size < 0 {
		return win32test.Disk{}, fmt.Errorf("size %d is negative", d.Size)
	}
	wd := win32test.Disk{Number: d.Number, Vendor: d.Vendor, Product: d.Product, Serial: d.Serial, Size: d.Size}
	if d.SCSI != nil {
		wd.SCSI = &win32.SCSIAddress{PortNumber: d.SCSI.Port, PathId: d.SCSI.Path, TargetId: d.SCSI.Target, Lun: d.SCSI.LUN}
	}
	if d.Page83 != nil {
		b, err := d.Page83.descriptor()
		if err != nil {
			return win32test.Disk{}, fmt.Errorf("page83: %w", err)
		}
		wd.Page83 = b
	}
	return wd, nil
}

// descriptor returns the STORAGE_DEVICE_ID_DESCRIPTOR p gives.
func (p fixturePage83) descriptor() ([]byte, error) {
	given := 0
	for _, s := range []string{p.ASCII, p.NAA, p.Raw} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return nil, fmt.Errorf("give exactly one of ascii, naa and raw, not %d", given)
	}
	switch {
	case p.ASCII != "":
		return deviceIDDescriptor(disk.StorageIdCodeSetAscii, disk.StorageIdTypeVendorId, []byte(p.ASCII))
	case p.NAA != "":
		id, err := hex.DecodeString(p.NAA)
		if err != nil {
			return nil, fmt.Errorf("naa: %w", err)
		}
		return deviceIDDescriptor(disk.StorageIdCodeSetBinary, disk.StorageIdTypeFCPHName, id)
	}
	raw, err := hex.DecodeString(p.Raw)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return raw, nil
}

// deviceIDDescriptor lays out a STORAGE_DEVICE_ID_DESCRIPTOR holding one
// STORAGE_IDENTIFIER for the device (StorageIdAssocDevice), as ntddstor.h
// declares them (the offsets are in agent/hostops/disk/page83.go): Version
// and Size are the bytes written, NextOffset the identifier's length
// rounded up to 4 bytes.
func deviceIDDescriptor(codeSet disk.StorageIdentifierCodeSet, typ disk.StorageIdentifierType, id []byte) ([]byte, error) {
	const header, idHeader = 12, 16
	next := (idHeader + len(id) + 3) &^ 3
	if len(id) > 0xffff || next > 0xffff {
		return nil, fmt.Errorf("an identifier of %d bytes does not fit its USHORT IdentifierSize", len(id))
	}
	b := make([]byte, header+next)
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint32(b[header:], uint32(codeSet))
	binary.LittleEndian.PutUint32(b[header+4:], uint32(typ))
	binary.LittleEndian.PutUint16(b[header+8:], uint16(len(id)))
	binary.LittleEndian.PutUint16(b[header+10:], uint16(next))
	binary.LittleEndian.PutUint32(b[header+12:], uint32(disk.StorageIdAssocDevice))
	copy(b[header+idHeader:], id)
	return b, nil
}
