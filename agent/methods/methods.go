package methods

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pipeguard/pipeguard/agent/confine"
)

// Field is one request field of a method that names what the call acts on.
type Field struct {
	// Name is the field's protobuf name, e.g. "target_path".
	Name string
	// Path is set when the field carries a host path: the path is confined
	// before the gate and again, resolved, before the host is touched.
	Path bool
	// Resolve says how much of a path field is resolved through symlinks:
	// ResolveParent when the operation acts on the name itself,
	// ResolveAll when it acts on what the name points to.
	Resolve confine.Mode
}

// Method is the table entry of one API method.
type Method struct {
	Group string
	Name  string
	// Fields name what the call acts on, in order of preference for the
	// audit record. Every field of the method that carries a path is here.
	Fields []Field
	paths  []Field
}

// Paths returns the fields of the method that carry host paths.
func (m *Method) Paths() []Field { return m.paths }

// Field returns the field called name.
func (m *Method) Field(name string) (Field, bool) {
	for _, f := range m.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Check confines and resolves the path that the request sent in the path
// field called name (package confine), with the field's resolve mode. A
// field the table does not list as a path is refused.
func (m *Method) Check(c *confine.Confiner, name, path string) (string, error) {
	f, err := m.pathField(name)
	if err != nil {
		return "", err
	}
	return f.Check(c, path)
}

// Final is Check for a path handed to a host command: it returns the
// resolved path the command is to be given (confine.Confiner.Final).
func (m *Method) Final(c *confine.Confiner, name, path string) (string, error) {
	f, err := m.pathField(name)
	if err != nil {
		return "", err
	}
	return f.Final(c, path)
}

func (m *Method) pathField(name string) (Field, error) {
	f, ok := m.Field(name)
	if !ok || !f.Path {
		return Field{}, fmt.Errorf("internal error: %s %s has no path field %q; the request was not run", m.Group, m.Name, name)
	}
	return f, nil
}

// Check confines and resolves a path sent in the field, with its resolve
// mode.
func (f Field) Check(c *confine.Confiner, path string) (string, error) {
	return c.Check(f.Name, path, f.Resolve)
}

// Final confines a path sent in the field that is handed to a host command,
// with its resolve mode, and returns the resolved path the command is to be
// given (confine.Confiner.Final).
func (f Field) Final(c *confine.Confiner, path string) (string, error) {
	return c.Final(f.Name, path, f.Resolve)
}

func parent(name string) Field { return Field{Name: name, Path: true, Resolve: confine.ResolveParent} }
func all(name string) Field    { return Field{Name: name, Path: true, Resolve: confine.ResolveAll} }
func object(name string) Field { return Field{Name: name} }

// table lists, per API group and method, the fields that name what the
// call acts on (see docs/agent.md#confinement for the path fields). Methods
// without such fields are listed with none, so that the table names every
// served method.
var table = map[string]map[string][]Field{
	"filesystem": {
		"PathExists":    {parent("path")},
		"Mkdir":         {all("path")},
		"Rmdir":         {parent("path")},
		"RmdirContents": {all("path")},
		// The link itself is created; its source is what it points to.
		"CreateSymlink": {parent("target_path"), all("source_path")},
		// Reports whether the link's target exists: the link is inspected.
		"IsSymlink": {parent("path")},
	},
	"volume": {
		// Mount targets are acted on as names: a target that is a link is
		// replaced or removed, not followed.
		"MountVolume":                      {parent("path"), parent("target_path"), object("volume_id")},
		"UnmountVolume":                    {parent("path"), parent("target_path"), object("volume_id")},
		"GetVolumeIDFromTargetPath":        {parent("target_path"), parent("mount")},
		"GetClosestVolumeIDFromTargetPath": {parent("target_path")},
		"IsVolumeFormatted":                {object("volume_id")},
		"FormatVolume":                     {object("volume_id")},
		"ResizeVolume":                     {object("volume_id")},
		"GetVolumeStats":                   {object("volume_id")},
		"GetDiskNumberFromVolumeID":        {object("volume_id")},
		"WriteVolumeCache":                 {object("volume_id")},
		"ListVolumesOnDisk":                {object("disk_number"), object("disk_id")},
	},
	"smb": {
		// The local link to the share is created, not followed.
		"NewSmbGlobalMapping":    {parent("local_path"), object("remote_path")},
		"RemoveSmbGlobalMapping": {object("remote_path")},
	},
	"disk": {
		"ListDiskLocations":   nil,
		"PartitionDisk":       {object("disk_number")},
		"Rescan":              nil,
		"ListDiskIDs":         nil,
		"GetDiskStats":        {object("disk_number")},
		"SetDiskState":        {object("disk_number")},
		"GetDiskState":        {object("disk_number")},
		"GetDiskNumberByName": nil,
	},
	"iscsi": {
		"AddTargetPortal":      nil,
		"DiscoverTargetPortal": nil,
		"RemoveTargetPortal":   nil,
		"ListTargetPortals":    nil,
		"ConnectTarget":        {object("iqn")},
		"DisconnectTarget":     {object("iqn")},
		"GetTargetDisks":       {object("iqn")},
		"SetMutualChapSecret":  nil,
	},
	"system": {
		"GetBIOSSerialNumber": nil,
		"StartService":        {object("name")},
		"StopService":         {object("name")},
		"GetService":          {object("name")},
	},
}

// renames maps, per API group, the names older API versions gave a method
// to its newest name.
var renames = map[string]map[string]string{
	"filesystem": {"LinkPath": "CreateSymlink", "IsMountPoint": "IsSymlink"},
	"volume": {"DismountVolume": "UnmountVolume", "VolumeStats": "GetVolumeStats",
		"GetVolumeDiskNumber": "GetDiskNumberFromVolumeID", "GetVolumeIDFromMount": "GetVolumeIDFromTargetPath"},
	"disk": {"DiskStats": "GetDiskStats", "SetAttachState": "SetDiskState", "GetAttachState": "GetDiskState"},
}

// Newest returns the newest name of method when older API versions of any
// group named it so (the renamed names are unique across groups), and
// method itself otherwise.
func Newest(method string) string {
	for _, rs := range renames {
		if n, ok := rs[method]; ok {
			return n
		}
	}
	return method
}

// index holds the table by group and method name, older names included,
// and, per group, a stand-in for methods the table does not list.
var index, unlisted = build()

func build() (map[string]map[string]*Method, map[string]*Method) {
	idx := map[string]map[string]*Method{}
	other := map[string]*Method{}
	for group, ms := range table {
		idx[group] = map[string]*Method{}
		// A method the table does not list gets every field of its group.
		rest := &Method{Group: group}
		seen := map[string]bool{}
		for name, fields := range ms {
			m := &Method{Group: group, Name: name, Fields: fields}
			for _, f := range fields {
				if f.Path {
					m.paths = append(m.paths, f)
				}
			}
			idx[group][name] = m
		}
		for _, name := range slices.Sorted(maps.Keys(ms)) {
			for _, f := range ms[name] {
				if !seen[f.Name] {
					seen[f.Name] = true
					rest.Fields = append(rest.Fields, f)
					if f.Path {
						rest.paths = append(rest.paths, f)
					}
				}
			}
		}
		other[group] = rest
		for old, name := range renames[group] {
			idx[group][old] = idx[group][name]
		}
	}
	return idx, other
}

// Lookup returns the entry of a method of an API group, by any of its names.
func Lookup(group, method string) (*Method, bool) {
	m, ok := index[group][method]
	return m, ok
}

// Of returns the entry of a method for a request: a method the table does
// not list gets every path and object field of its group, so that nothing
// is left unconfined; a group it does not list gets none.
func Of(group, method string) *Method {
	if m, ok := index[group][method]; ok {
		return m
	}
	if m, ok := unlisted[group]; ok {
		return m
	}
	return &none
}

// none is the entry of every method of a group the table does not list.
var none Method

// MustLookup is Lookup for the API group servers: it panics when the table
// does not list the method, so a server and the table cannot drift apart
// unnoticed.
func MustLookup(group, method string) *Method {
	m, ok := Lookup(group, method)
	if !ok {
		panic(fmt.Sprintf("methods: no table entry for %s %s", group, method))
	}
	return m
}

// MustPath returns a path field of a method, and panics when the table does
// not list it as one.
func MustPath(group, method, field string) Field {
	f, ok := MustLookup(group, method).Field(field)
	if !ok || !f.Path {
		panic(fmt.Sprintf("methods: %s %s has no path field %q in the table", group, method, field))
	}
	return f
}
