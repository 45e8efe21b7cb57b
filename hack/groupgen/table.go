package main

// This table holds what the API descriptors cannot tell: which internal call
// serves each RPC, how the fields of older versions were named, and how a
// field converts when its type differs from the internal one. Everything
// else (versions, RPCs, request and response types, Go names, getters) comes
// from the descriptors.

// group describes one CSI Proxy API group.
type group struct {
	name string
	// ops maps each RPC, by its newest name, to the internal call serving it.
	ops map[string]op
	// renames maps, per version, older RPC and field names to the names
	// used in ops.
	renames map[string]map[string]string
	// convs converts a value between a field's type and an internal type,
	// keyed "from->to". A type is a Go scalar type, the name of an enum or
	// message, or an internal Go type. In expr, $ stands for the value and @
	// for the quoted name of the request field.
	convs map[string]conv
	// fields builds the fields of response messages made from internal
	// values, keyed "Message.field": $ stands for the internal value. By
	// default a field takes the internal value's field of the same Go name.
	fields map[string]string
	// ignore lists fields that no internal call reads or writes: requests
	// ignore them and responses leave them empty.
	ignore []string
	// imports are the packages, by name, that convs and ops refer to.
	imports map[string]string
}

// op is one internal call. call is relative to the internal server, e.g.
// "MountVolume" or "host.Rescan". in lists the call's arguments after the
// context: "field type" passes a request field, converted to type if needed
// (or the zero value when the version lacks the field), and "@field" passes
// the field's name in the version, so that refusals name the field the
// client sent. out lists the response fields, "field type", that the call's
// results fill, in order; the call returns them and an error.
type op struct {
	call string
	in   []string
	out  []string
}

type conv struct {
	expr  string
	fails bool // expr returns the value and an error
}

// groups are the generated API groups.
var groups = []group{
	{
		name: "disk",
		ops: map[string]op{
			"ListDiskLocations":   {call: "host.ListDiskLocations", out: []string{"disk_locations map[uint32]hostdisk.Location"}},
			"PartitionDisk":       {call: "host.PartitionDisk", in: []string{"disk_number uint32"}},
			"Rescan":              {call: "host.Rescan"},
			"ListDiskIDs":         {call: "host.ListDiskIDs", out: []string{"diskIDs map[uint32]hostdisk.IDs"}},
			"GetDiskStats":        {call: "host.GetDiskStats", in: []string{"disk_number uint32"}, out: []string{"total_bytes int64"}},
			"SetDiskState":        {call: "host.SetDiskState", in: []string{"disk_number uint32", "is_online bool"}},
			"GetDiskState":        {call: "host.GetDiskState", in: []string{"disk_number uint32"}, out: []string{"is_online bool"}},
			"GetDiskNumberByName": {call: "diskNumberByName", in: []string{"disk_name string"}, out: []string{"disk_number uint32"}},
		},
		renames: map[string]map[string]string{
			"v1alpha1": {"diskID": "disk_number"},
			"v1beta1":  {"diskID": "disk_number", "DiskStats": "GetDiskStats", "diskSize": "total_bytes"},
			"v1beta2": {"diskID": "disk_number", "DiskStats": "GetDiskStats", "diskSize": "total_bytes",
				"SetAttachState": "SetDiskState", "GetAttachState": "GetDiskState", "isOnline": "is_online"},
		},
		convs: map[string]conv{
			"string->uint32": {expr: "parseDiskID(@, $)", fails: true},
			"uint32->string": {expr: "diskKey($)"},
		},
		fields: map[string]string{
			"DiskIDs.identifiers": "map[string]string{idPage83: $.Page83, idSerialNumber: $.SerialNumber}",
		},
	},
	{
		name: "filesystem",
		ops: map[string]op{
			"PathExists":    {call: "PathExists", in: []string{"path string"}, out: []string{"exists bool"}},
			"Mkdir":         {call: "Mkdir", in: []string{"path string"}},
			"Rmdir":         {call: "Rmdir", in: []string{"path string", "force bool"}},
			"RmdirContents": {call: "RmdirContents", in: []string{"path string"}},
			"CreateSymlink": {call: "CreateSymlink", in: []string{"source_path string", "target_path string"}},
			"IsSymlink":     {call: "IsSymlink", in: []string{"path string"}, out: []string{"is_symlink bool"}},
		},
		renames: map[string]map[string]string{
			"v1alpha1": {"LinkPath": "CreateSymlink", "IsMountPoint": "IsSymlink", "is_mount_point": "is_symlink"},
			"v1beta1":  {"LinkPath": "CreateSymlink", "IsMountPoint": "IsSymlink", "is_mount_point": "is_symlink"},
		},
		// The older versions' path context is ignored by CSI Proxy too, and
		// their error fields stay empty: failures are gRPC errors.
		ignore: []string{"context", "error"},
	},
	{
		name: "iscsi",
		ops: map[string]op{
			"AddTargetPortal":      {call: "host.AddTargetPortal", in: []string{"target_portal hostiscsi.Portal"}},
			"DiscoverTargetPortal": {call: "host.DiscoverTargetPortal", in: []string{"target_portal hostiscsi.Portal"}, out: []string{"iqns []string"}},
			"RemoveTargetPortal":   {call: "host.RemoveTargetPortal", in: []string{"target_portal hostiscsi.Portal"}},
			"ListTargetPortals":    {call: "host.ListTargetPortals", out: []string{"target_portals []hostiscsi.Portal"}},
			"ConnectTarget": {call: "connect", in: []string{"target_portal hostiscsi.Portal", "iqn string",
				"auth_type hostiscsi.AuthType", "chap_username string", "chap_secret string"}},
			"DisconnectTarget":    {call: "disconnect", in: []string{"target_portal hostiscsi.Portal", "iqn string"}},
			"GetTargetDisks":      {call: "targetDisks", in: []string{"target_portal hostiscsi.Portal", "iqn string"}, out: []string{"diskIDs []string"}},
			"SetMutualChapSecret": {call: "setMutualChapSecret", in: []string{"MutualChapSecret string"}},
		},
		convs: map[string]conv{
			"TargetPortal->hostiscsi.Portal":         {expr: "portal($ != nil, $.GetTargetAddress(), $.GetTargetPort())", fails: true},
			"AuthenticationType->hostiscsi.AuthType": {expr: "hostiscsi.AuthType($)"},
		},
		fields: map[string]string{
			"TargetPortal.target_address": "$.Address",
			"TargetPortal.target_port":    "$.Port",
		},
		imports: map[string]string{"hostiscsi": "github.com/pipeguard/pipeguard/agent/hostops/iscsi"},
	},
	{
		name: "smb",
		ops: map[string]op{
			"NewSmbGlobalMapping":    {call: "NewSmbGlobalMapping", in: []string{"remote_path string", "local_path string", "username string", "password string"}},
			"RemoveSmbGlobalMapping": {call: "RemoveSmbGlobalMapping", in: []string{"remote_path string"}},
		},
		// The error field of the older responses stays empty: failures are
		// gRPC errors, as with CSI Proxy.
		ignore: []string{"error"},
	},
	{
		name: "volume",
		ops: map[string]op{
			"IsVolumeFormatted":                {call: "IsVolumeFormatted", in: []string{"volume_id string"}, out: []string{"formatted bool"}},
			"FormatVolume":                     {call: "FormatVolume", in: []string{"volume_id string"}},
			"ListVolumesOnDisk":                {call: "ListVolumesOnDisk", in: []string{"disk_number uint32", "partition_number uint32"}, out: []string{"volume_ids []string"}},
			"MountVolume":                      {call: "MountVolume", in: []string{"volume_id string", "@target_path", "target_path string"}},
			"UnmountVolume":                    {call: "UnmountVolume", in: []string{"volume_id string", "@target_path", "target_path string"}},
			"ResizeVolume":                     {call: "ResizeVolume", in: []string{"volume_id string", "@size_bytes", "size_bytes int64"}},
			"GetVolumeStats":                   {call: "GetVolumeStats", in: []string{"volume_id string"}, out: []string{"total_bytes int64", "used_bytes int64"}},
			"GetDiskNumberFromVolumeID":        {call: "GetDiskNumberFromVolumeID", in: []string{"volume_id string"}, out: []string{"disk_number uint32"}},
			"GetVolumeIDFromTargetPath":        {call: "GetVolumeIDFromTargetPath", in: []string{"@target_path", "target_path string"}, out: []string{"volume_id string"}},
			"GetClosestVolumeIDFromTargetPath": {call: "GetClosestVolumeIDFromTargetPath", in: []string{"target_path string"}, out: []string{"volume_id string"}},
			"WriteVolumeCache":                 {call: "WriteVolumeCache", in: []string{"volume_id string"}},
		},
		renames: map[string]map[string]string{
			"v1alpha1": volumeLegacy,
			"v1beta1":  volumeBeta,
			"v1beta2":  volumeBeta,
		},
		convs: map[string]conv{
			"string->uint32": {expr: "parseDiskID(@, $)", fails: true},
			"uint32->int64":  {expr: "int64($)"},
		},
	},
}

// volumeLegacy are the names of volume v1alpha1, which v1beta1 and v1beta2 keep.
var volumeLegacy = map[string]string{
	"DismountVolume": "UnmountVolume", "disk_id": "disk_number", "path": "target_path", "size": "size_bytes",
}

// volumeBeta are the names of volume v1beta1 and v1beta2.
var volumeBeta = merge(volumeLegacy, map[string]string{
	"VolumeStats": "GetVolumeStats", "volumeSize": "total_bytes", "volumeUsedSize": "used_bytes",
	"GetVolumeDiskNumber": "GetDiskNumberFromVolumeID", "diskNumber": "disk_number",
	"GetVolumeIDFromMount": "GetVolumeIDFromTargetPath", "mount": "target_path",
})

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
