package wmitest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// The GPT partition types the storage classes tell apart (CreatePartition
// of MSFT_Disk documents them).
const (
	GPTBasicData         = "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}"
	GPTMicrosoftReserved = "{e3c9e316-0b5c-4db8-817d-f92df00215ae}"
)

// Storage is the storage management classes of a provider, registered by
// AddStorage in wmi.NamespaceStorage: MSFT_Disk, MSFT_Partition,
// MSFT_Volume, MSFT_StorageSetting, and the associations
// MSFT_DiskToPartition and MSFT_PartitionToVolume. Its methods have the
// signatures Microsoft documents (learn.microsoft.com, Windows Storage
// Management API) and do what a test can observe: Initialize sets the
// partition style, CreatePartition adds a partition and its raw volume,
// Online and Offline set IsOffline, Resize sets Size, Format sets the file
// system. Fail makes a method return a code instead.
type Storage struct {
	p *Provider

	mu    sync.Mutex
	fail  map[string]storageFailure // by Class.Method
	count int                       // of the objects made, for their ObjectIds
}

type storageFailure struct {
	code    uint32
	message string
}

const storageNS = wmi.NamespaceStorage

// AddStorage registers the storage management classes in p and returns
// them, with their helpers.
func AddStorage(p *Provider) *Storage {
	s := &Storage{p: p, fail: map[string]storageFailure{}}
	status := Param{"ExtendedStatus", wmi.Object{}}
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_Disk", Key: "ObjectId", Methods: map[string]Method{
		// Initialize: 0 Success, 1 Not Supported, 2 Unspecified Error, 3
		// Timeout, 4 Failed, 5 Invalid Parameter, 6 Disk is in use, 40001
		// Access denied, 40002 not enough resources, 40003 Cache out of
		// date, 41001 The disk has already been initialized, 41010 The
		// specified partition type is not valid, 41014 The disk is not
		// large enough to support a GPT partition style, 41018 managed by
		// Failover Clustering.
		"Initialize": s.method("MSFT_Disk.Initialize", Method{
			In: []Param{{"PartitionStyle", uint16(0)}}, Out: []Param{status}, Run: s.initialize}),
		// CreatePartition: 0, 1-6 as above, 4097 Size Not Supported, 40000
		// Not enough free space, 40001-40003, 40005 Size or
		// UseMaximumSize, one of them, 41000 The disk has not been
		// initialized, 41002 read only, 41003 The disk is offline, 41004
		// partition limit, 41005 alignment, 41006 A parameter is not
		// valid for this type of partition, 41010 partition type, 41011
		// first 2 TB on MBR, 41012 and 41016 offset, 41015 no media,
		// 41017 layout, 41018 clustering, 42002 The requested access path
		// is already in use, 42004 hidden partitions, 42007 access path.
		"CreatePartition": s.method("MSFT_Disk.CreatePartition", Method{
			In: []Param{{"Size", uint64(0)}, {"UseMaximumSize", false}, {"Offset", uint64(0)}, {"Alignment", uint32(0)},
				{"DriveLetter", uint16(0)}, {"AssignDriveLetter", false}, {"MbrType", uint16(0)}, {"GptType", ""},
				{"IsHidden", false}, {"IsActive", false}},
			Out: []Param{{"CreatedPartition", wmi.Object{}}, status}, Run: s.createPartition}),
		// Online: 0, 1-6, 40001-40003, 41018.
		"Online": s.method("MSFT_Disk.Online", Method{Out: []Param{status}, Run: func(p *Provider, d *Instance, _ map[string]any) (uint32, map[string]any) {
			d.Props["IsOffline"] = false
			return 0, nil
		}}),
		// Offline: 0, 1-6, 40001-40003, 41009 Operation not supported on
		// a critical disk, 41018.
		"Offline": s.method("MSFT_Disk.Offline", Method{Out: []Param{status}, Run: func(p *Provider, d *Instance, _ map[string]any) (uint32, map[string]any) {
			if d.Props["IsSystem"] == true || d.Props["IsBoot"] == true {
				return 41009, storageStatus("the disk holds the system or boot volume")
			}
			d.Props["IsOffline"] = true
			return 0, nil
		}}),
		// Refresh: 0, 1-6, 40001-40003, 41000 The disk has not been
		// initialized, 41003 The disk is offline.
		"Refresh": s.method("MSFT_Disk.Refresh", Method{Out: []Param{status}, Run: func(p *Provider, d *Instance, _ map[string]any) (uint32, map[string]any) {
			if d.Props["IsOffline"] == true {
				return 41003, storageStatus("the disk is offline")
			}
			return 0, nil
		}}),
	}})
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_Partition", Key: "ObjectId", Methods: map[string]Method{
		// Online: 0, 1-5, 6 In Use, 40001, 40002, 42011 This operation is
		// only supported on data partitions.
		"Online": s.method("MSFT_Partition.Online", Method{Out: []Param{status}, Run: func(p *Provider, pt *Instance, _ map[string]any) (uint32, map[string]any) {
			if g, _ := pt.Props["GptType"].(string); g != "" && !strings.EqualFold(g, GPTBasicData) {
				return 42011, storageStatus("not a data partition")
			}
			pt.Props["IsOffline"] = false
			return 0, nil
		}}),
		// GetSupportedSize: 0, 1-5, 4097 Size Not Supported, 40001,
		// 40002, 42008 Cannot shrink a partition containing a volume with
		// errors, 42009 Cannot resize a partition containing an unknown
		// file system.
		"GetSupportedSize": s.method("MSFT_Partition.GetSupportedSize", Method{
			Out: []Param{{"SizeMin", uint64(0)}, {"SizeMax", uint64(0)}, status},
			Run: func(p *Provider, pt *Instance, _ map[string]any) (uint32, map[string]any) {
				lo, hi := s.supported(pt)
				return 0, map[string]any{"SizeMin": lo, "SizeMax": hi}
			}}),
		// Resize: the codes of GetSupportedSize; Size is required and
		// cannot be zero.
		"Resize": s.method("MSFT_Partition.Resize", Method{In: []Param{{"Size", uint64(0)}}, Out: []Param{status}, Run: s.resize}),
	}})
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_Volume", Key: "ObjectId", Methods: map[string]Method{
		// Format: 0, 1-5, 7 not supported on x86 running in x64, 40001
		// Access Denied, 40004 An unexpected I/O error has occurred, 40018
		// clustering, 42010 The operation is not allowed on a system or
		// critical partition, 43000 cluster size, 43001 The specified file
		// system is not supported, 43002 The volume cannot be quick
		// formatted, 43003 clusters exceed 32 bits, 43004 UDF version,
		// 43005 cluster size and sector size, 43006 read only.
		"Format": s.method("MSFT_Volume.Format", Method{
			In: []Param{{"FileSystem", ""}, {"FileSystemLabel", ""}, {"AllocationUnitSize", uint32(0)}, {"Full", false},
				{"Force", false}, {"Compress", false}, {"ShortFileNameSupport", false}, {"SetIntegrityStreams", false},
				{"UseLargeFRS", false}, {"DisableHeatGathering", false}},
			Out: []Param{{"FormattedVolume", wmi.Object{}}, status}, Run: s.format}),
	}})
	// UpdateHostStorageCache takes no parameters and documents no return
	// values of its own, nor an ExtendedStatus.
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_StorageSetting", Methods: map[string]Method{
		"UpdateHostStorageCache": s.method("MSFT_StorageSetting.UpdateHostStorageCache", Method{Static: true,
			Run: func(*Provider, *Instance, map[string]any) (uint32, map[string]any) { return 0, nil }}),
	}})
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_DiskToPartition"})
	p.AddClass(&Class{Namespace: storageNS, Name: "MSFT_PartitionToVolume"})
	return s
}

// Fail makes every later call of method ("MSFT_Volume.Format") return
// code, with message in its ExtendedStatus when it has one; code 0 undoes
// it.
func (s *Storage) Fail(method string, code uint32, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == 0 {
		delete(s.fail, strings.ToLower(method))
		return
	}
	s.fail[strings.ToLower(method)] = storageFailure{code, message}
}

// method is m, answering with the failure Fail set for name, if any.
func (s *Storage) method(name string, m Method) Method {
	run := m.Run
	_, hasStatus := paramSpec(m.Out, "ExtendedStatus")
	m.Run = func(p *Provider, self *Instance, in map[string]any) (uint32, map[string]any) {
		s.mu.Lock()
		f, ok := s.fail[strings.ToLower(name)]
		s.mu.Unlock()
		if !ok {
			return run(p, self, in)
		}
		if !hasStatus {
			return f.code, nil
		}
		return f.code, storageStatus(f.message)
	}
	return m
}

// storageStatus is an ExtendedStatus out-parameter: an
// MSFT_StorageExtendedStatus with its Message.
func storageStatus(message string) map[string]any {
	return map[string]any{"ExtendedStatus": wmi.Object{Class: "MSFT_StorageExtendedStatus", Props: map[string]any{"Message": message}}}
}

func (s *Storage) seq() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	return s.count
}

// nextID is a new ObjectId. It holds backslashes and quotes, as real
// ObjectIds do, so that a path that is not escaped fails; no braces, which
// the provider's ASSOCIATORS OF cannot hold.
func (s *Storage) nextID(kind string) string {
	return fmt.Sprintf(`\\NODE\ROOT/Microsoft/Windows/Storage\%s.ObjectId="%d"`, kind, s.seq())
}

// AddDisk adds disk number of size bytes, online, with the partition style
// style (0 RAW, 1 MBR, 2 GPT).
func (s *Storage) AddDisk(number uint32, size uint64, style uint16) *Instance {
	return s.p.Add(storageNS, "MSFT_Disk", map[string]any{"ObjectId": s.nextID("Disk"), "Number": number, "Size": size,
		"PartitionStyle": style, "IsOffline": false, "IsSystem": false, "IsBoot": false})
}

// AddPartition adds a partition of size bytes and GPT type gptType ("" for
// none, as on an MBR disk) at the end of disk, linked to it by
// MSFT_DiskToPartition.
func (s *Storage) AddPartition(disk *Instance, size uint64, gptType string) *Instance {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.addPartitionLocked(disk, size, gptType)
}

func (s *Storage) addPartitionLocked(disk *Instance, size uint64, gptType string) *Instance {
	parts := s.partitionsLocked(disk)
	var used uint64
	for _, pt := range parts {
		used += pt.Props["Size"].(uint64)
	}
	props := map[string]any{"ObjectId": s.nextID("Partition"), "DiskNumber": disk.Props["Number"],
		"PartitionNumber": uint32(len(parts) + 1), "Offset": used, "Size": size, "IsOffline": false,
		"IsSystem": false, "IsBoot": false}
	if gptType != "" {
		props["GptType"] = gptType
	}
	pt := s.p.AddLocked(storageNS, "MSFT_Partition", props)
	s.p.AssociateLocked("MSFT_DiskToPartition", disk, pt)
	return pt
}

// AddVolume adds the volume uniqueID on partition, with fileSystem (""
// for none), linked to it by MSFT_PartitionToVolume.
func (s *Storage) AddVolume(partition *Instance, uniqueID, fileSystem string) *Instance {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.addVolumeLocked(partition, uniqueID, fileSystem)
}

func (s *Storage) addVolumeLocked(partition *Instance, uniqueID, fileSystem string) *Instance {
	v := s.p.AddLocked(storageNS, "MSFT_Volume", map[string]any{"ObjectId": s.nextID("Volume"), "UniqueId": uniqueID,
		"FileSystem": fileSystem, "FileSystemType": fileSystemTypes[strings.ToUpper(fileSystem)],
		"FileSystemLabel": "", "Size": partition.Props["Size"]})
	s.p.AssociateLocked("MSFT_PartitionToVolume", partition, v)
	return v
}

// Set sets a property of an instance, for a test, under the provider's
// lock.
func (s *Storage) Set(in *Instance, prop string, value any) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	in.Props[prop] = value
}

// Prop reads a property of an instance under the provider's lock.
func (s *Storage) Prop(in *Instance, prop string) any {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return in.Props[prop]
}

// linked returns the instances of class linked to in by assoc; the lock
// is held.
func (s *Storage) linked(assoc string, in *Instance, class string) []*Instance {
	var out []*Instance
	for _, pr := range s.p.assoc[strings.ToLower(assoc)] {
		for j, x := range pr {
			if x == in && strings.EqualFold(pr[1-j].Class, class) {
				out = append(out, pr[1-j])
			}
		}
	}
	return out
}

func (s *Storage) partitionsLocked(disk *Instance) []*Instance {
	return s.linked("MSFT_DiskToPartition", disk, "MSFT_Partition")
}

// MSFT_Volume.FileSystemType of the file systems Format takes (ExFAT has
// no value of its own: Unknown).
var fileSystemTypes = map[string]uint16{"FAT": 4, "FAT32": 6, "NTFS": 14, "REFS": 15}

// formatFileSystems are the file systems Format documents, by their
// upper-case names.
var formatFileSystems = map[string]string{"EXFAT": "ExFAT", "FAT": "FAT", "FAT32": "FAT32", "NTFS": "NTFS", "REFS": "ReFS"}
