// Package hostops groups the host operations of the agent, one small
// interface per CSI Proxy API group, in its subpackages:
//
//   - filesystem: portable Go, real on every OS;
//   - disk, volume, smb, iscsi, system: Windows storage and service
//     operations, run as fixed PowerShell scripts through runner.Runner.
//
// The Windows operations never build command text from request strings: each
// script is a constant, request values travel as environment variables that
// the script reads ($Env:name), and every value is validated before the
// command runs. This is the class of bug behind CVE-2023-3893 in CSI Proxy.
// Because they only speak to a Runner, their commands and output parsing are
// tested on any OS with a fake runner.
package hostops
