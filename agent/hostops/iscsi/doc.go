// Package iscsi holds the host operations of the CSI Proxy iscsi API group,
// as constant PowerShell scripts run through a runner.Runner with every
// request value, CHAP secrets included, in the environment.
package iscsi
