package methods

import (
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/confine"
)

func TestLookupByOlderNames(t *testing.T) {
	for _, tc := range []struct{ group, method, want string }{
		{"filesystem", "LinkPath", "CreateSymlink"},
		{"filesystem", "IsMountPoint", "IsSymlink"},
		{"volume", "DismountVolume", "UnmountVolume"},
		{"volume", "GetVolumeIDFromMount", "GetVolumeIDFromTargetPath"},
		{"disk", "SetAttachState", "SetDiskState"},
		{"system", "StartService", "StartService"},
	} {
		m, ok := Lookup(tc.group, tc.method)
		if !ok || m.Name != tc.want || m.Group != tc.group {
			t.Errorf("Lookup(%s, %s) = %+v, %v; want %s", tc.group, tc.method, m, ok, tc.want)
		}
	}
}

// TestPaths checks that path fields carry their resolve modes and that the
// fields of a method the table does not list are those of its whole group.
func TestPaths(t *testing.T) {
	names := func(fs []Field) string {
		var out []string
		for _, f := range fs {
			mode := "parent"
			if f.Resolve == confine.ResolveAll {
				mode = "all"
			}
			out = append(out, f.Name+":"+mode)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ group, method, want string }{
		{"filesystem", "CreateSymlink", "target_path:parent source_path:all"},
		{"filesystem", "Mkdir", "path:all"},
		{"volume", "MountVolume", "path:parent target_path:parent"},
		{"volume", "FormatVolume", ""},
		{"smb", "NewSmbGlobalMapping", "local_path:parent"},
		{"disk", "PartitionDisk", ""},
		{"volume", "NoSuchMethod", "target_path:parent mount:parent path:parent"},
		{"nosuchgroup", "PathExists", ""},
	} {
		if got := names(Of(tc.group, tc.method).Paths()); got != tc.want {
			t.Errorf("%s %s paths %q, want %q", tc.group, tc.method, got, tc.want)
		}
	}
}

func TestCheckRefusesUnlistedField(t *testing.T) {
	conf, err := confine.New(confine.Options{Flavour: confine.Linux, Roots: []string{"/var/lib/kubelet"}})
	if err != nil {
		t.Fatal(err)
	}
	m := MustLookup("volume", "MountVolume")
	if _, err := m.Check(conf, "volume_id", "/var/lib/kubelet/x"); err == nil || !strings.Contains(err.Error(), `no path field "volume_id"`) {
		t.Fatalf("Check of a field that is no path: %v", err)
	}
	if p, err := m.Check(conf, "target_path", "/var/lib/kubelet/x"); err != nil || p != "/var/lib/kubelet/x" {
		t.Fatalf("Check(target_path) = %q, %v", p, err)
	}
}

func TestMustPathPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustPath of a field that is no path did not panic")
		}
	}()
	MustPath("volume", "MountVolume", "volume_id")
}
