// Package system holds the host operations of the CSI Proxy system API group:
// the BIOS serial number and Windows services, as constant PowerShell scripts
// run through a runner.Runner with every request value in the environment.
package system
