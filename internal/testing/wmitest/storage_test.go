package wmitest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

const storageNS = wmi.NamespaceStorage

func pathOf(t *testing.T, s *wmitest.Storage, class string, in *wmitest.Instance) string {
	t.Helper()
	return wmitest.RelPath(class, "ObjectId", s.Prop(in, "ObjectId").(string))
}

// callCode calls method on path and returns its ReturnValue.
func callCode(t *testing.T, p *wmitest.Provider, path, method string, in ...wmi.Param) uint32 {
	t.Helper()
	out, err := p.Call(context.Background(), storageNS, path, method, in...)
	return code(t, out, err)
}

func code(t *testing.T, out wmi.Object, err error) uint32 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	c, ok := wmi.Uint32(out.Props["ReturnValue"])
	if !ok {
		t.Fatalf("ReturnValue %v", out.Props["ReturnValue"])
	}
	return c
}

func TestStorageDisk(t *testing.T) {
	p := wmitest.New()
	s := wmitest.AddStorage(p)
	d := s.AddDisk(3, 1<<30, 0)
	path, ctx := pathOf(t, s, "MSFT_Disk", d), context.Background()

	// CreatePartition on a raw disk: 41000; Initialize: GPT, then 41001.
	out, err := p.Call(ctx, storageNS, path, "CreatePartition", wmi.Param{Name: "UseMaximumSize", Value: true})
	if c := code(t, out, err); c != 41000 {
		t.Fatalf("CreatePartition of a raw disk: %d, want 41000", c)
	}
	if c := callCode(t, p, path, "Initialize", wmi.Param{Name: "PartitionStyle", Value: uint16(2)}); c != 0 || s.Prop(d, "PartitionStyle") != uint16(2) {
		t.Fatalf("Initialize: %d, style %v", c, s.Prop(d, "PartitionStyle"))
	}
	out, err = p.Call(ctx, storageNS, path, "Initialize", wmi.Param{Name: "PartitionStyle", Value: uint16(2)})
	if c := code(t, out, err); c != 41001 {
		t.Fatalf("Initialize of an initialized disk: %d, want 41001", c)
	}
	if err := wmi.Result("MSFT_Disk.Initialize", out, wmi.Codes{}); err == nil || !strings.Contains(err.Error(), "the disk has already been initialized") {
		t.Fatalf("ExtendedStatus not read: %v", err)
	}
	// A parameter of the wrong type is refused as WMI refuses it.
	_, err = p.Call(ctx, storageNS, path, "Initialize", wmi.Param{Name: "PartitionStyle", Value: int32(2)})
	var we *wmi.Error
	if !errors.As(err, &we) || we.HRESULT != wmi.WBEMEInvalidParam {
		t.Fatalf("int32 PartitionStyle: %v", err)
	}
	// Size and UseMaximumSize: one of them.
	out, err = p.Call(ctx, storageNS, path, "CreatePartition")
	if c := code(t, out, err); c != 40005 {
		t.Fatalf("CreatePartition with no size: %d, want 40005", c)
	}
	out, err = p.Call(ctx, storageNS, path, "CreatePartition", wmi.Param{Name: "UseMaximumSize", Value: true})
	if c := code(t, out, err); c != 0 {
		t.Fatalf("CreatePartition: %d", c)
	}
	created, _ := out.Props["CreatedPartition"].(wmi.Object)
	if created.Props["Size"] != uint64(1<<30) || created.Props["GptType"] != wmitest.GPTBasicData {
		t.Fatalf("CreatedPartition %+v", created)
	}
	parts, err := p.Query(ctx, storageNS, "ASSOCIATORS OF {"+path+"} WHERE AssocClass = MSFT_DiskToPartition ResultClass = MSFT_Partition")
	if err != nil || len(parts) != 1 {
		t.Fatalf("partitions of the disk: %v %v", parts, err)
	}
	vols, err := p.Query(ctx, storageNS, "ASSOCIATORS OF {"+parts[0].Path+"} WHERE AssocClass = MSFT_PartitionToVolume ResultClass = MSFT_Volume")
	if err != nil || len(vols) != 1 || vols[0].Props["FileSystem"] != "" {
		t.Fatalf("the new partition's raw volume: %v %v", vols, err)
	}

	// Offline and Online set IsOffline; the system disk stays online.
	if c := callCode(t, p, path, "Offline"); c != 0 || s.Prop(d, "IsOffline") != true {
		t.Fatalf("Offline: %d", c)
	}
	if c := callCode(t, p, path, "Refresh"); c != 41003 {
		t.Fatalf("Refresh of an offline disk: %d, want 41003", c)
	}
	if c := callCode(t, p, path, "Online"); c != 0 || s.Prop(d, "IsOffline") != false {
		t.Fatalf("Online: %d", c)
	}
	s.Set(d, "IsSystem", true)
	if c := callCode(t, p, path, "Offline"); c != 41009 {
		t.Fatalf("Offline of the system disk: %d, want 41009", c)
	}
}

func TestStoragePartitionAndVolume(t *testing.T) {
	p := wmitest.New()
	s := wmitest.AddStorage(p)
	d := s.AddDisk(1, 10<<30, 2)
	pt := s.AddPartition(d, 4<<30, wmitest.GPTBasicData)
	v := s.AddVolume(pt, `\\?\Volume{1}\`, "")
	ppath, vpath, ctx := pathOf(t, s, "MSFT_Partition", pt), pathOf(t, s, "MSFT_Volume", v), context.Background()

	out, err := p.Call(ctx, storageNS, ppath, "GetSupportedSize")
	if c := code(t, out, err); c != 0 || out.Props["SizeMax"] != uint64(10<<30) {
		t.Fatalf("GetSupportedSize: %d %v", c, out.Props)
	}
	if c := callCode(t, p, ppath, "Resize", wmi.Param{Name: "Size", Value: uint64(11 << 30)}); c != 4097 {
		t.Fatalf("Resize past the disk: %d, want 4097", c)
	}
	if c := callCode(t, p, ppath, "Resize", wmi.Param{Name: "Size", Value: uint64(6 << 30)}); c != 0 || s.Prop(pt, "Size") != uint64(6<<30) || s.Prop(v, "Size") != uint64(6<<30) {
		t.Fatalf("Resize: %d, sizes %v %v", c, s.Prop(pt, "Size"), s.Prop(v, "Size"))
	}
	format := func(fs string) uint32 {
		return callCode(t, p, vpath, "Format", wmi.Param{Name: "FileSystem", Value: fs}, wmi.Param{Name: "Full", Value: false})
	}
	if c := format("XFS"); c != 43001 {
		t.Fatalf("Format as XFS: %d, want 43001", c)
	}
	if c := format("ntfs"); c != 0 || s.Prop(v, "FileSystem") != "NTFS" || s.Prop(v, "FileSystemType") != uint16(14) {
		t.Fatalf("Format: %d, %v", c, s.Prop(v, "FileSystem"))
	}
	s.Set(pt, "IsBoot", true)
	if c := format("NTFS"); c != 42010 {
		t.Fatalf("Format of the boot volume: %d, want 42010", c)
	}
	// Fail makes a method answer a code until it is undone.
	s.Fail("MSFT_StorageSetting.UpdateHostStorageCache", 40001, "ignored: no ExtendedStatus")
	out, err = p.Call(ctx, storageNS, "MSFT_StorageSetting", "UpdateHostStorageCache")
	if c := code(t, out, err); c != 40001 || out.Props["ExtendedStatus"] != nil {
		t.Fatalf("failed UpdateHostStorageCache: %d %v", c, out.Props)
	}
	s.Fail("MSFT_StorageSetting.UpdateHostStorageCache", 0, "")
	if c := callCode(t, p, "MSFT_StorageSetting", "UpdateHostStorageCache"); c != 0 {
		t.Fatalf("UpdateHostStorageCache: %d", c)
	}
}
