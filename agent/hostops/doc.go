// Package hostops groups the host operations of the agent, one small
// interface per CSI Proxy API group, in its subpackages:
//
//   - filesystem: portable Go, real on every OS;
//   - disk, volume, smb, system: Windows storage and service operations.
//     What has a Win32 equivalent each group's Native does in the agent's
//     own process, through the seam win32.Sys (and, for system, its
//     seams win32.Services, the service control manager, and
//     win32.Firmware); the rest are Cmdlets, fixed PowerShell
//     scripts run through runner.Runner (the agent's PowerShell workers).
//     disk, volume and smb build their Native with New(Deps), which refuses
//     a Native without its Win32 host or its Cmdlets;
//   - iscsi: Cmdlets only;
//   - limits: the deadline and the concurrency cap of every host call,
//     shared between callers, which runner.Bound applies to a group's
//     commands and limits.Call to its Win32 calls.
//
// The scripts never hold request strings: each is a constant, request values
// travel as data that the script reads from $Env:name, and every value is
// validated before the call. This is the class of bug behind CVE-2023-3893
// in CSI Proxy. The Win32 answers are read by decoders of Microsoft's
// documented layouts (win32), tested on byte-level answers; win32test is an
// in-memory host built from the same layouts, and runnertest.Fake answers the
// scripts, so both halves are tested on any OS.
//
// The host operations import only each other, agent/confine and the
// module's internal helpers (test/layers checks it): request validation
// (agent/groups/validate), API errors and peer identity belong to the
// groups above them, which turn the typed host errors into API answers.
package hostops
