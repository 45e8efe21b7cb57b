// Package system holds the host operations of the CSI Proxy system API group:
// the BIOS serial number and Windows services. Native calls the service
// control manager and reads the SMBIOS tables; it starts no process.
package system
