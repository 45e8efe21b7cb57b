// Package hostops groups the host operations of the agent, one small
// interface per CSI Proxy API group, in its subpackages:
//
//   - filesystem: portable Go, real on every OS;
//   - disk, volume, smb, system: Windows storage and service operations.
//     What has a Win32 equivalent each group's Native does in the agent's
//     own process, through the seam win32.Sys (and, for system, its
//     seams win32.Services, the service control manager, and
//     win32.Firmware); the rest (Cmdlets: formatting, partitioning,
//     rescanning, the disk state, SMB global mappings) are WMI method calls
//     on the storage and SMB management classes, through the seam wmi.Conn,
//     also in the agent's own process. disk, volume and smb build their
//     Native with New(Deps), which refuses a Native without its Win32 host
//     or its Cmdlets;
//   - iscsi: WMI calls only;
//   - wmi: the agent's small layer over the host's WMI service (COM);
//   - limits: the deadline and the concurrency cap of every host call,
//     shared between callers, which limits.Call applies to a group's Win32
//     and WMI calls.
//
// No host operation starts a process (test/layers checks it), and none
// builds command text: request values are validated before the call, reach
// a WQL query only through wmi.Quote, and secrets travel only as method
// in-parameters. The class of bug behind CVE-2023-3893 in CSI Proxy
// (command injection) has no command to inject into. The Win32 answers are
// read by decoders of Microsoft's documented layouts (win32), tested on
// byte-level answers; internal/testing/win32test is an in-memory host built
// from the same layouts, and internal/testing/wmitest an in-memory WMI
// provider with the classes' documented method signatures and return codes,
// so both halves are tested on any OS.
//
// The host operations import only each other, agent/confine and the
// module's internal helpers (test/layers checks it): request validation
// (agent/groups/validate), API errors and peer identity belong to the
// groups above them, which turn the typed host errors into API answers.
package hostops
