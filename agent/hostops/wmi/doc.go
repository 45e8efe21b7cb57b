// Package wmi is the agent's small layer over the host's WMI service, the
// way CSI Proxy 1.3 does its storage, SMB and iSCSI work: a query, a Get
// of an object, and a method call with in-parameters whose out-parameters
// and ReturnValue are read back. The operations that have no Win32 call
// (formatting, partitioning, SMB global mappings, iSCSI) are method calls
// on the MSFT_* classes through Conn, in the agent's own process: no
// PowerShell and no process of any kind.
//
// Conn is the seam. On Windows, New returns the COM implementation (COM on
// locked OS threads in the multithreaded apartment, security at packet
// privacy with impersonation); elsewhere New fails.
// internal/testing/wmitest is an in-memory provider of the MSFT_* classes,
// with their documented method signatures and return codes, for the tests
// of the groups on any OS.
//
// Request values reach a WQL query only through Quote, and secrets only
// as method in-parameters: never in a query string, an error or a log.
//
// # On Windows
//
// New returns a Conn over WMI's COM interfaces (IWbemLocator,
// IWbemServices, IEnumWbemClassObject, IWbemCallResult, IWbemClassObject,
// called through their vtables). It contacts nothing: the first call to a
// namespace connects to it, and the connection is kept for the process's
// life; a failed connection is tried again by the next call.
//
// Calls run on a pool of Workers OS threads, each locked and initialised
// in the multithreaded apartment; the first sets the process's COM
// security (packet privacy, impersonation; a process whose security is
// already set keeps it), and every IWbemServices and enumerator gets the
// same proxy blanket. A call waits for a free worker, and returns ctx's
// error as soon as ctx ends, while waiting or while running. Queries are
// semisynchronous and forward-only, read in waits of 50 ms; Get and the
// method calls are semisynchronous (WBEM_FLAG_RETURN_IMMEDIATELY, then
// IWbemCallResult::GetResultObject in waits of 50 ms) when the WMI
// answers so, which a probe at the connection finds out: the worker looks
// at ctx between waits and is freed soon after ctx ends. ConnectServer
// cannot be waited for in steps (it is bounded by two minutes), nor can a
// WMI that answers synchronously: then the worker stays with the call
// until the provider answers, though the caller has returned. WMI cannot
// stop a provider: the operation may still complete on the host.
//
// Values are read by their CIM types, in the VARIANT types Windows sends
// (uint16 and uint32 as VT_I4, 64-bit integers as decimal strings) and
// in the ones Wine sends (VT_UI2, VT_UI4, VT_I8, VT_UI8); in-parameters
// are put in Windows' encoding, then in the one that names the type
// itself when the WMI refuses the first with WBEM_E_TYPE_MISMATCH.
//
// Under Wine (test/wine), whose WMI has the Win32_* classes and
// StdRegProv but no MSFT_* class, the tests run queries, Gets and
// StdRegProv calls for real. Wine's WMI runs in the calling process and
// ignores WBEM_FLAG_RETURN_IMMEDIATELY, so there every Get and call is
// synchronous on its worker; its providers are not safe for concurrent
// calls, so a WMI in this process (an IWbemServices that is no COM proxy)
// takes one call at a time. Wine answers a query of a class it lacks with
// no objects, not WBEM_E_INVALID_CLASS. CoSetProxyBlanket succeeds there
// on an object that is no proxy and secures nothing. The semisynchronous
// paths, a real proxy blanket, embedded objects from a provider (a test
// reads one it builds) and the MSFT_* classes have not run under Wine.
package wmi
