package gate

import (
	"path"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
)

// readMethods lists, per API group, every method that only reads the host,
// under every name an API version gives it. Every other method mutates.
var readMethods = map[string][]string{
	"disk": {"ListDiskLocations", "ListDiskIDs", "GetDiskStats", "DiskStats",
		"GetDiskState", "GetAttachState", "GetDiskNumberByName"},
	"filesystem": {"PathExists", "IsSymlink", "IsMountPoint"},
	"iscsi":      {"ListTargetPortals", "GetTargetDisks"},
	"smb":        nil,
	"system":     {"GetBIOSSerialNumber", "GetService"},
	"volume": {"ListVolumesOnDisk", "IsVolumeFormatted", "GetVolumeStats", "VolumeStats",
		"GetDiskNumberFromVolumeID", "GetVolumeDiskNumber", "GetVolumeIDFromTargetPath", "GetVolumeIDFromMount",
		"GetClosestVolumeIDFromTargetPath"},
}

// TestReadMethodsUnderEveryVersionName classes every method of every CSI
// Proxy API version: the reads listed above are not mutating, under every
// version's name, and every other method is.
func TestReadMethodsUnderEveryVersionName(t *testing.T) {
	reads := map[string]map[string]bool{}
	for group, names := range readMethods {
		reads[group] = map[string]bool{}
		for _, n := range names {
			reads[group][n] = true
		}
	}
	seen := map[string]bool{}
	versions := 0
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		// Files are registered as [prefix/]<group>/<version>/api.proto.
		parts := strings.Split(fd.Path(), "/")
		if len(parts) < 3 || path.Base(fd.Path()) != "api.proto" {
			return true
		}
		group, version := parts[len(parts)-3], parts[len(parts)-2]
		if _, ok := reads[group]; !ok {
			return true
		}
		for i := range fd.Services().Len() {
			versions++
			ms := fd.Services().Get(i).Methods()
			for j := range ms.Len() {
				name := string(ms.Get(j).Name())
				seen[group+"/"+name] = true
				if want := !reads[group][name]; Mutating(name) != want {
					t.Errorf("%s %s %s: Mutating = %v, want %v", group, version, name, !want, want)
				}
			}
		}
		return true
	})
	if versions != 23 {
		t.Errorf("found %d API group versions, want the 23 of the CSI Proxy client", versions)
	}
	for group, names := range readMethods {
		for _, n := range names {
			if !seen[group+"/"+n] {
				t.Errorf("%s %s is listed as a read but no API version has it", group, n)
			}
		}
	}
	for _, name := range []string{"DiskStats", "VolumeStats"} {
		if Mutating(name) {
			t.Errorf("Mutating(%q) = true: the v1beta stats calls only read", name)
		}
	}
}
