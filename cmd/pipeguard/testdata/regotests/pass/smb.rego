package pipeguard.admission.smbonly

# Only the csi-smb node ServiceAccount may mount the smb pipe.
violation contains {"rule": "smb-sa-only", "msg": sprintf("container %q mounts the smb pipe but the pod runs as %q", [m.container, input.pod.serviceAccountName])} if {
	some m in input.mounts
	m.pipe == "csi-proxy-smb-v1"
	input.pod.serviceAccountName != "csi-smb-node-sa"
}
