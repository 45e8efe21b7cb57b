// Package iscsi holds the host operations of the CSI Proxy iscsi API group,
// as WMI method calls on the MSFT_iSCSI* classes (WMI) in the agent's own
// process, with CHAP secrets only as method in-parameters.
package iscsi
