// Package disk holds the host operations of the CSI Proxy disk API group, as
// constant PowerShell scripts run through a runner.Runner. Disk numbers are
// integers formatted by the agent and passed in the environment.
package disk
