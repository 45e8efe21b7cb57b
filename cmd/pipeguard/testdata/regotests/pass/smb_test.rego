package pipeguard.admission.smbonly_test

import data.pipeguard.admission.smbonly

test_other_service_account_is_reported if {
	count(smbonly.violation) == 1 with input as {"pod": {"serviceAccountName": "default"}, "mounts": [{"container": "c", "pipe": "csi-proxy-smb-v1"}]}
}

test_driver_service_account_passes if {
	count(smbonly.violation) == 0 with input as {"pod": {"serviceAccountName": "csi-smb-node-sa"}, "mounts": [{"container": "c", "pipe": "csi-proxy-smb-v1"}]}
}
