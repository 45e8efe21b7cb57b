//go:build wine && linux

package wine

// The CSI Proxy v1 calls that three real CSI drivers make on a Windows node
// for one pod's volume, phase by phase, recorded from each driver's own
// source (the CSI Proxy v1 "safe mounter" of each, not host-process mode).
// A test replays them with the unmodified CSI Proxy client against
// pipeguard-agent and counts the processes the agent starts per phase.
//
// Each sequence is the path a first stage of a new, unformatted volume takes,
// then publish, one stats poll, unpublish and unstage of that same volume.
// Where a driver branches on an answer, the comment above the call names the
// answer the recorded path needs. For the sequences to proceed as recorded,
// the host must answer:
//
//   - disk/v1 ListDiskLocations: disk lcDisk at LUNID lcLUN (azuredisk).
//   - disk/v1 ListDiskIDs: disk lcDisk with page83 "Google " + lcPV, the
//     GCE device name (gce-pd, SCSI disk; an NVMe disk is matched by its
//     serial number instead, still with one ListDiskIDs call).
//   - volume/v1 ListVolumesOnDisk for lcDisk: exactly one volume, lcVolume.
//   - volume/v1 IsVolumeFormatted: false on stage (a new disk).
//   - volume/v1 GetVolumeIDFromTargetPath: lcVolume, for the staging path
//     and for the publish path (a link to the staging path).
//   - volume/v1 GetDiskNumberFromVolumeID: lcDisk.
//   - filesystem/v1 PathExists and IsSymlink: as noted above each call;
//     kubelet creates the staging directory itself before NodeStageVolume
//     and only the parent of the publish path before NodePublishVolume.
//   - every other call: success with an empty response.
//
// A driver also does some work in its own process between calls (os.MkdirAll,
// os.Readlink, reference files for SMB mappings); a replay that wants the
// same host state creates what the comments say the driver created.

// phase is one CSI node operation of a driver and the CSI Proxy calls it
// makes, in order.
type phase struct {
	name  string
	calls []call
}

// lifecycle is the phases one driver goes through for one pod's volume.
type lifecycle struct {
	driver, source string
	phases         []phase
}

// Placeholder values; a test replaces them with the ones of its host.
const (
	lcKubelet = `C:\var\lib\kubelet`
	lcPodUID  = "6f1c2d3e-4b5a-4978-8e01-0123456789ab"
	lcPV      = "pvc-0b6c5e1a-2f3d-4c4b-9a8e-7d6c5b4a3f21"
	// lcVolSHA stands for the SHA-256 of the volume handle, which kubelet
	// uses to name the staging directory.
	lcVolSHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	lcDisk   = 3
	lcLUN    = "1"
	lcVolume = `\\?\Volume{5c1f0e7a-9d2b-4e61-8a43-0000000000a1}\`
	// lcShare is the share the SMB driver maps: its "source" volume
	// attribute //fileserver/share with the slashes turned round.
	lcShare = `\\fileserver\share`
	// lcSMBUser is the secret's username "smbuser" with the driver's
	// default domain in front.
	lcSMBUser     = `AZURE\smbuser`
	lcSMBPassword = "smb-Passw0rd"

	lcPublish       = lcKubelet + `\pods\` + lcPodUID + `\volumes\kubernetes.io~csi\` + lcPV + `\mount`
	lcAzureStageDir = lcKubelet + `\plugins\kubernetes.io\csi\disk.csi.azure.com\` + lcVolSHA
	lcAzureStaging  = lcAzureStageDir + `\globalmount`
	lcGCEStageDir   = lcKubelet + `\plugins\kubernetes.io\csi\pd.csi.storage.gke.io\` + lcVolSHA
	lcGCEStaging    = lcGCEStageDir + `\globalmount`
	lcSMBStageDir   = lcKubelet + `\plugins\kubernetes.io\csi\smb.csi.k8s.io\` + lcVolSHA
	lcSMBStaging    = lcSMBStageDir + `\globalmount`
)

// azuredisk (disk.csi.azure.com), started with --use-csiproxy-ga-interface.

var azureDiskStage = []call{
	// azuredisk NodeStageVolume → getDevicePathWithLUN → scsiHostRescan → Rescan
	{"disk/v1", "Rescan", nil},
	// azuredisk NodeStageVolume → getDevicePathWithLUN → findDiskByLun → FindDiskByLun → ListDiskLocations (answers lcDisk at lcLUN; otherwise polled each second for two minutes)
	{"disk/v1", "ListDiskLocations", nil},
	// azuredisk NodeStageVolume → ensureMountPoint → IsLikelyNotMountPoint → ExistsPath → PathExists (answers true: kubelet made the directory)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcAzureStaging}},
	// azuredisk NodeStageVolume → ensureMountPoint → IsLikelyNotMountPoint → IsSymlink (answers false: not staged yet)
	{"filesystem/v1", "IsSymlink", map[string]any{"path": lcAzureStaging}},
	// azuredisk NodeStageVolume → formatAndMount → FormatAndMount → PartitionDisk
	{"disk/v1", "PartitionDisk", map[string]any{"diskNumber": lcDisk}},
	// azuredisk NodeStageVolume → formatAndMount → FormatAndMount → ListVolumesOnDisk (answers lcVolume first)
	{"volume/v1", "ListVolumesOnDisk", map[string]any{"diskNumber": lcDisk}},
	// azuredisk NodeStageVolume → formatAndMount → FormatAndMount → IsVolumeFormatted (answers false: a new disk)
	{"volume/v1", "IsVolumeFormatted", map[string]any{"volumeId": lcVolume}},
	// azuredisk NodeStageVolume → formatAndMount → FormatAndMount → FormatVolume
	{"volume/v1", "FormatVolume", map[string]any{"volumeId": lcVolume}},
	// azuredisk NodeStageVolume → formatAndMount → FormatAndMount → MountVolume
	{"volume/v1", "MountVolume", map[string]any{"volumeId": lcVolume, "targetPath": lcAzureStaging}},
}

var azureDiskPublish = []call{
	// azuredisk NodePublishVolume → preparePublishPath → ExistsPath → PathExists (answers false: kubelet made only the parent; true would add Rmdir)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcPublish}},
	// azuredisk NodePublishVolume → ensureMountPoint → IsLikelyNotMountPoint → ExistsPath → PathExists (answers false, so no IsSymlink)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcPublish}},
	// azuredisk NodePublishVolume → Mount → CreateSymlink (the publish path becomes a link to the staging path)
	{"filesystem/v1", "CreateSymlink", map[string]any{"sourcePath": lcAzureStaging, "targetPath": lcPublish}},
}

var azureDiskStats = []call{
	// azuredisk NodeGetVolumeStats → GetVolumeStats → csiProxyMounter.GetVolumeStats → GetVolumeIDFromTargetPath (answers lcVolume)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcPublish}},
	// azuredisk NodeGetVolumeStats → GetVolumeStats → csiProxyMounter.GetVolumeStats → GetVolumeStats
	{"volume/v1", "GetVolumeStats", map[string]any{"volumeId": lcVolume}},
}

var azureDiskUnpublish = []call{
	// azuredisk NodeUnpublishVolume → CleanupMountPoint → Unmount → GetVolumeIDFromTargetPath (answers lcVolume; a failure is only logged and skips WriteVolumeCache)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcPublish}},
	// azuredisk NodeUnpublishVolume → CleanupMountPoint → Unmount → WriteVolumeCache
	{"volume/v1", "WriteVolumeCache", map[string]any{"volumeId": lcVolume}},
	// azuredisk NodeUnpublishVolume → CleanupMountPoint → Unmount → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcPublish, "force": true}},
}

// azuredisk unstages with Rmdir of the mount point; it never calls UnmountVolume.
var azureDiskUnstage = []call{
	// azuredisk NodeUnstageVolume → CleanupMountPoint → Unmount → GetVolumeIDFromTargetPath (answers lcVolume)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcAzureStaging}},
	// azuredisk NodeUnstageVolume → CleanupMountPoint → Unmount → WriteVolumeCache
	{"volume/v1", "WriteVolumeCache", map[string]any{"volumeId": lcVolume}},
	// azuredisk NodeUnstageVolume → CleanupMountPoint → Unmount → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcAzureStaging, "force": true}},
}

// gcp-compute-persistent-disk-csi-driver (pd.csi.storage.gke.io), CSIProxyMounterV1.

var gcePDStage = []call{
	// gce-pd NodeStageVolume → getDevicePath → GetDiskNumber → getDiskNumberLegacy → ListDiskIDs (answers lcDisk with page83 "Google " + lcPV)
	{"disk/v1", "ListDiskIDs", nil},
	// gce-pd NodeStageVolume → isVolumePathMounted → IsLikelyNotMountPoint → IsSymlink (answers false: not staged yet)
	{"filesystem/v1", "IsSymlink", map[string]any{"path": lcGCEStaging}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → PartitionDisk
	{"disk/v1", "PartitionDisk", map[string]any{"diskNumber": lcDisk}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → SetDiskState (online)
	{"disk/v1", "SetDiskState", map[string]any{"diskNumber": lcDisk, "isOnline": true}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → ListVolumesOnDisk (answers lcVolume first)
	{"volume/v1", "ListVolumesOnDisk", map[string]any{"diskNumber": lcDisk}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → IsVolumeFormatted (answers false: a new disk)
	{"volume/v1", "IsVolumeFormatted", map[string]any{"volumeId": lcVolume}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → FormatVolume
	{"volume/v1", "FormatVolume", map[string]any{"volumeId": lcVolume}},
	// gce-pd NodeStageVolume → formatAndMount → FormatAndMount → MountVolume
	{"volume/v1", "MountVolume", map[string]any{"volumeId": lcVolume, "targetPath": lcGCEStaging}},
	// gce-pd NodeStageVolume → DeviceUtils.Resize → resizeFs.resizeV1 → GetVolumeIDFromTargetPath (answers lcVolume; a read-only volume skips the resize)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcGCEStaging}},
	// gce-pd NodeStageVolume → DeviceUtils.Resize → resizeFs.resizeV1 → ResizeVolume (size 0: the whole disk)
	{"volume/v1", "ResizeVolume", map[string]any{"volumeId": lcVolume}},
}

var gcePDPublish = []call{
	// gce-pd NodePublishVolume → isVolumePathMounted → IsLikelyNotMountPoint → IsSymlink (the path does not exist yet: answers false or fails, and either way the driver goes on)
	{"filesystem/v1", "IsSymlink", map[string]any{"path": lcPublish}},
	// gce-pd NodePublishVolume → preparePublishPath → ExistsPath → PathExists (answers false; true would add Rmdir)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcPublish}},
	// gce-pd NodePublishVolume → Mount → MountSensitive → CreateSymlink (after os.MkdirAll of the parent in the driver's process)
	{"filesystem/v1", "CreateSymlink", map[string]any{"sourcePath": lcGCEStaging, "targetPath": lcPublish}},
}

var gcePDStats = []call{
	// gce-pd NodeGetVolumeStats → realStatter.StatFS → StatFSV1 → GetVolumeIDFromTargetPath (answers lcVolume)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcPublish}},
	// gce-pd NodeGetVolumeStats → realStatter.StatFS → StatFSV1 → GetVolumeStats
	{"volume/v1", "GetVolumeStats", map[string]any{"volumeId": lcVolume}},
}

var gcePDUnpublish = []call{
	// gce-pd NodeUnpublishVolume → cleanupPublishPath → RemovePodDir → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcPublish, "force": true}},
}

// utils_windows.go at f60f299 is older than the CSIProxyMounter interface at
// 348848f, which has no RemovePluginDir any more: cleanupStagePath calls the
// interface's UnmountDevice, and getDevicePath calls GetDiskNumber.
var gcePDUnstage = []call{
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → ExistsPath → PathExists (answers true; false ends the unmount here)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcGCEStaging}},
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → GetVolumeIDFromTargetPath (answers lcVolume)
	{"volume/v1", "GetVolumeIDFromTargetPath", map[string]any{"targetPath": lcGCEStaging}},
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → UnmountVolume
	{"volume/v1", "UnmountVolume", map[string]any{"volumeId": lcVolume, "targetPath": lcGCEStaging}},
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcGCEStaging, "force": true}},
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → GetDiskNumberFromVolumeID (answers lcDisk)
	{"volume/v1", "GetDiskNumberFromVolumeID", map[string]any{"volumeId": lcVolume}},
	// gce-pd NodeUnstageVolume → cleanupStagePath → UnmountDevice → SetDiskState (offline)
	{"disk/v1", "SetDiskState", map[string]any{"diskNumber": lcDisk, "isOnline": false}},
	// gce-pd NodeUnstageVolume → getDevicePath → GetDiskNumber → getDiskNumberLegacy → ListDiskIDs (to disable the device, a no-op on Windows)
	{"disk/v1", "ListDiskIDs", nil},
}

// csi-driver-smb (smb.csi.k8s.io), started with
// --remove-smb-mapping-during-unmount=true, the default.

var smbStage = []call{
	// smb NodeStageVolume → ensureMountPoint → IsLikelyNotMountPoint → ExistsPath → PathExists (answers true: kubelet made the directory)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcSMBStaging}},
	// smb NodeStageVolume → ensureMountPoint → IsLikelyNotMountPoint → IsSymlink (answers false: not staged yet)
	{"filesystem/v1", "IsSymlink", map[string]any{"path": lcSMBStaging}},
	// smb NodeStageVolume → prepareStagePath → removeDir → ExistsPath → PathExists (answers true)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcSMBStaging}},
	// smb NodeStageVolume → prepareStagePath → removeDir → Rmdir (the mapping's link takes the directory's place)
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcSMBStaging, "force": true}},
	// smb NodeStageVolume → Mount → SMBMount → ExistsPath → PathExists of the parent (answers true; false would add Mkdir)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcSMBStageDir}},
	// smb NodeStageVolume → Mount → SMBMount → NewSmbGlobalMapping (then a reference file in the driver's process)
	{"smb/v1", "NewSmbGlobalMapping", map[string]any{"remotePath": lcShare, "localPath": lcSMBStaging, "username": lcSMBUser, "password": lcSMBPassword}},
}

var smbPublish = []call{
	// smb NodePublishVolume → ensureMountPoint → IsLikelyNotMountPoint → ExistsPath → PathExists (answers false: kubelet made only the parent; the driver then runs os.MkdirAll on the path in its own process)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcPublish}},
	// smb NodePublishVolume → preparePublishPath → removeDir → ExistsPath → PathExists (answers true: the directory the driver just made)
	{"filesystem/v1", "PathExists", map[string]any{"path": lcPublish}},
	// smb NodePublishVolume → preparePublishPath → removeDir → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcPublish, "force": true}},
	// smb NodePublishVolume → Mount → CreateSymlink (the publish path becomes a link to the staging path)
	{"filesystem/v1", "CreateSymlink", map[string]any{"sourcePath": lcSMBStaging, "targetPath": lcPublish}},
}

// smb NodeGetVolumeStats reads the volume with GetDiskFreeSpaceEx in its own
// process (volume.NewMetricsStatFS): a stats poll makes no CSI Proxy call.
var smbStats = []call{}

var smbUnpublish = []call{
	// smb NodeUnpublishVolume → CleanupMountPoint → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcPublish, "force": true}},
}

var smbUnstage = []call{
	// smb NodeUnstageVolume → CleanupSMBMountPoint → SMBUnmount → RemoveSmbGlobalMapping (os.Readlink of the staging link gives the share; sent when this volume was the share's last reference)
	{"smb/v1", "RemoveSmbGlobalMapping", map[string]any{"remotePath": lcShare}},
	// smb NodeUnstageVolume → CleanupSMBMountPoint → SMBUnmount → Rmdir
	{"filesystem/v1", "Rmdir", map[string]any{"path": lcSMBStaging, "force": true}},
}

// lifecycles are the three drivers' sequences, with the source they were
// read from (repository: path@commit).
var lifecycles = []lifecycle{
	{
		driver: "azuredisk",
		source: "kubernetes-sigs/azuredisk-csi-driver: " +
			"pkg/azuredisk/nodeserver.go@1beb273c14f50c404f6ebc3634680dbc989e9d8a, " +
			"pkg/azuredisk/azure_common_windows.go@6cae497f2b635a213b37ba20649d01d8c6f32c9b, " +
			"pkg/mounter/safe_mounter_windows.go@7bc5bcf244234fb19326da78a1bcd1d6ca2349eb",
		phases: []phase{
			{"stage", azureDiskStage},
			{"publish", azureDiskPublish},
			{"stats", azureDiskStats},
			{"unpublish", azureDiskUnpublish},
			{"unstage", azureDiskUnstage},
		},
	},
	{
		driver: "gce-pd",
		source: "kubernetes-sigs/gcp-compute-persistent-disk-csi-driver: " +
			"pkg/gce-pd-csi-driver/node.go@a41e8256255278683fd1990776b7e5a57c2ad9c4, " +
			"pkg/mount-manager/safe-mounter-v1_windows.go@08a69a91ec4f59d1900ffc06b52c13df0975a8ae, " +
			"pkg/mount-manager/safe-mounter_windows.go@348848fd8727d019c9b365feb744821037d45e85, " +
			"pkg/mount-manager/statter_windows.go@f6689529f5268dfa81a2514a43f4294c8025dac7, " +
			"pkg/resizefs/resizefs_windows.go@441b4a33b3eae250135064cbcc67953f44397a0c, " +
			"pkg/gce-pd-csi-driver/utils_windows.go@f60f299386487b1422b701aee915f51c4264d799",
		phases: []phase{
			{"stage", gcePDStage},
			{"publish", gcePDPublish},
			{"stats", gcePDStats},
			{"unpublish", gcePDUnpublish},
			{"unstage", gcePDUnstage},
		},
	},
	{
		driver: "smb",
		source: "kubernetes-csi/csi-driver-smb: " +
			"pkg/smb/nodeserver.go@6467cff3177f5db9106af09e1efe5e92514f7509, " +
			"pkg/smb/smb_common_windows.go@d754461054fa48c4fadac5f7712ad21eaf50dd81, " +
			"pkg/mounter/safe_mounter_windows.go@b2d2d0094773d326fbf6b4b029e8dbb025e55171, " +
			"pkg/mounter/refcounter_windows.go@d754461054fa48c4fadac5f7712ad21eaf50dd81",
		phases: []phase{
			{"stage", smbStage},
			{"publish", smbPublish},
			{"stats", smbStats},
			{"unpublish", smbUnpublish},
			{"unstage", smbUnstage},
		},
	},
}
