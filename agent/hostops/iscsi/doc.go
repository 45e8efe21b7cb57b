// Package iscsi holds the host operations of the CSI Proxy iscsi API group,
// in two implementations of API: WMI, the MSFT_iSCSI* methods called in the
// agent's own process as CSI Proxy 1.3 calls them, and PowerShell, constant
// scripts run through a runner.Runner. Either passes every request value,
// CHAP secrets included, as data: a WMI in-parameter or an environment
// variable.
package iscsi
