//go:build windows

package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	hostdisk "github.com/pipeguard/pipeguard/agent/hostops/disk"
	"github.com/pipeguard/pipeguard/agent/hostops/win32"
	"github.com/pipeguard/pipeguard/internal/testing/win32test"
)

// fixture is the part of the agent's Win32 fixture file (PIPEGUARD_WIN32_FIXTURE,
// test/wine/cmd/fixtureagent/win32.go) the stand-in reads: disks with
// an ASCII page 83 identifier, volumes and mount points.
type fixture struct {
	Disks []struct {
		Number uint32 `json:"number"`
		SCSI   *struct {
			Port, Path, Target, LUN uint8
		} `json:"scsi"`
		Page83 *struct {
			ASCII string `json:"ascii"`
		} `json:"page83"`
		Vendor  string `json:"vendor"`
		Product string `json:"product"`
		Serial  string `json:"serial"`
		Size    int64  `json:"size"`
	} `json:"disks"`
	Volumes []struct {
		ID      string `json:"id"`
		Extents []struct {
			Disk   uint32 `json:"disk"`
			Offset int64  `json:"offset"`
			Length int64  `json:"length"`
		} `json:"extents"`
		Partition  uint32 `json:"partition"`
		FileSystem string `json:"fileSystem"`
		Total      uint64 `json:"total"`
		Free       uint64 `json:"free"`
	} `json:"volumes"`
	MountPoints map[string]string `json:"mountPoints"`
}

// loadFixture returns the host the file describes, Wine answering the rest.
func loadFixture(path string) (*win32test.Host, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	h := win32test.New()
	h.Real = win32.New()
	for _, d := range f.Disks {
		wd := win32test.Disk{Number: d.Number, Vendor: d.Vendor, Product: d.Product, Serial: d.Serial, Size: d.Size}
		if d.SCSI != nil {
			wd.SCSI = &win32.SCSIAddress{PortNumber: d.SCSI.Port, PathId: d.SCSI.Path, TargetId: d.SCSI.Target, Lun: d.SCSI.LUN}
		}
		if d.Page83 != nil {
			wd.Page83 = asciiDescriptor(d.Page83.ASCII)
		}
		h.AddDisk(wd)
	}
	for _, v := range f.Volumes {
		wv := win32test.Volume{ID: win32.VolumeRoot(v.ID), PartitionNumber: v.Partition, FileSystem: v.FileSystem, Total: v.Total, Free: v.Free}
		for _, e := range v.Extents {
			wv.Extents = append(wv.Extents, win32.DiskExtent{DiskNumber: e.Disk, StartingOffset: e.Offset, ExtentLength: e.Length})
		}
		h.AddVolume(wv)
	}
	for folder, volume := range f.MountPoints {
		if err := h.SetMountPoint(strings.TrimRight(folder, `\`)+`\`, win32.VolumeRoot(volume)); err != nil {
			return nil, fmt.Errorf("mountPoints: %s: %w", folder, err)
		}
	}
	return h, nil
}

// asciiDescriptor lays out a STORAGE_DEVICE_ID_DESCRIPTOR holding one
// ASCII vendor identifier for the device, as the agent's fixture does.
func asciiDescriptor(id string) []byte {
	const header, idHeader = 12, 16
	next := (idHeader + len(id) + 3) &^ 3
	b := make([]byte, header+next)
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint32(b[header:], uint32(hostdisk.StorageIdCodeSetAscii))
	binary.LittleEndian.PutUint32(b[header+4:], uint32(hostdisk.StorageIdTypeVendorId))
	binary.LittleEndian.PutUint16(b[header+8:], uint16(len(id)))
	binary.LittleEndian.PutUint16(b[header+10:], uint16(next))
	binary.LittleEndian.PutUint32(b[header+12:], uint32(hostdisk.StorageIdAssocDevice))
	copy(b[header+idHeader:], id)
	return b
}
