package wmitest

// What the storage classes' methods do, as a test can observe it.

import (
	"fmt"
	"strings"
)

func (s *Storage) initialize(p *Provider, d *Instance, in map[string]any) (uint32, map[string]any) {
	style := uint16(2) // GPT, the documented default
	if v, ok := in["PartitionStyle"]; ok {
		style = v.(uint16)
	}
	if st, _ := d.Props["PartitionStyle"].(uint16); st != 0 {
		return 41001, storageStatus("the disk has already been initialized")
	}
	if style != 1 && style != 2 {
		return 41010, storageStatus(fmt.Sprintf("partition style %d", style))
	}
	d.Props["PartitionStyle"] = style
	return 0, nil
}

func (s *Storage) createPartition(p *Provider, d *Instance, in map[string]any) (uint32, map[string]any) {
	style, _ := d.Props["PartitionStyle"].(uint16)
	switch {
	case style == 0:
		return 41000, storageStatus("the disk has not been initialized")
	case d.Props["IsOffline"] == true:
		return 41003, storageStatus("the disk is offline")
	}
	size, sized := in["Size"].(uint64)
	if sized == (in["UseMaximumSize"] == true) {
		return 40005, storageStatus("give Size or UseMaximumSize")
	}
	if _, ok := in["DriveLetter"]; ok && in["AssignDriveLetter"] == true {
		return 5, storageStatus("DriveLetter with AssignDriveLetter")
	}
	_, gpt := in["GptType"]
	_, mbr := in["MbrType"]
	if gpt && style != 2 || mbr && style != 1 {
		return 41006, storageStatus("the partition type does not fit the disk's partition style")
	}
	var used uint64
	for _, pt := range s.partitionsLocked(d) {
		used += pt.Props["Size"].(uint64)
	}
	free := d.Props["Size"].(uint64) - used
	if !sized {
		size = free
	}
	if free == 0 || size > free {
		return 40000, storageStatus("not enough free space")
	}
	gptType := ""
	if style == 2 {
		gptType = GPTBasicData
		if g, ok := in["GptType"].(string); ok {
			gptType = g
		}
	}
	pt := s.addPartitionLocked(d, size, gptType)
	if gptType == "" || strings.EqualFold(gptType, GPTBasicData) {
		s.addVolumeLocked(pt, fmt.Sprintf(`\\?\Volume{00000000-0000-0000-0000-%012d}\`, s.seq()), "")
	}
	return 0, map[string]any{"CreatedPartition": p.object(p.classes[classKey(storageNS, "MSFT_Partition")], pt)}
}

// supported is GetSupportedSize's answer: down to 16 MiB (or the size, if
// smaller), up to the size and the disk's free space.
func (s *Storage) supported(pt *Instance) (lo, hi uint64) {
	size := pt.Props["Size"].(uint64)
	lo = min(size, 16<<20)
	hi = size
	for _, d := range s.linked("MSFT_DiskToPartition", pt, "MSFT_Disk") {
		used := uint64(0)
		for _, x := range s.partitionsLocked(d) {
			used += x.Props["Size"].(uint64)
		}
		hi += d.Props["Size"].(uint64) - used
	}
	return lo, hi
}

func (s *Storage) resize(p *Provider, pt *Instance, in map[string]any) (uint32, map[string]any) {
	size, _ := in["Size"].(uint64)
	if size == 0 {
		return 5, storageStatus("Size is required and cannot be zero")
	}
	vols := s.linked("MSFT_PartitionToVolume", pt, "MSFT_Volume")
	for _, v := range vols {
		if fs, _ := v.Props["FileSystem"].(string); fs != "" && !strings.EqualFold(fs, "NTFS") {
			return 42009, storageStatus("the volume's file system cannot be resized")
		}
	}
	if lo, hi := s.supported(pt); size < lo || size > hi {
		return 4097, storageStatus(fmt.Sprintf("size %d is outside %d to %d", size, lo, hi))
	}
	pt.Props["Size"] = size
	for _, v := range vols {
		v.Props["Size"] = size
	}
	return 0, nil
}

func (s *Storage) format(p *Provider, v *Instance, in map[string]any) (uint32, map[string]any) {
	fs, ok := in["FileSystem"].(string)
	if !ok {
		return 5, storageStatus("no file system")
	}
	name, ok := formatFileSystems[strings.ToUpper(fs)]
	if !ok {
		return 43001, storageStatus("file system " + fs)
	}
	for _, pt := range s.linked("MSFT_PartitionToVolume", v, "MSFT_Partition") {
		if pt.Props["IsSystem"] == true || pt.Props["IsBoot"] == true {
			return 42010, storageStatus("the volume is on a system or boot partition")
		}
	}
	label, _ := in["FileSystemLabel"].(string)
	v.Props["FileSystem"] = name
	v.Props["FileSystemType"] = fileSystemTypes[strings.ToUpper(name)]
	v.Props["FileSystemLabel"] = label
	v.Props["SizeRemaining"] = v.Props["Size"]
	return 0, map[string]any{"FormattedVolume": p.object(p.classes[classKey(storageNS, "MSFT_Volume")], v)}
}
