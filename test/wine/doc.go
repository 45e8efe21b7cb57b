// Package wine runs pipeguard's Windows half under Wine: the agent serving
// the CSI Proxy named pipes, the unmodified CSI Proxy client library calling
// them, the host operations through WMI in the agent's own process (a WMI
// fixture for the storage, SMB and iSCSI classes Wine lacks) with every
// process the agent creates counted from Wine's trace (there must be none),
// the audit log and its verification by pipeguard.exe, the pipes' security
// descriptor and the service mode, and the Windows builds of the agent's
// package tests, the WMI layer's against Wine's own WMI service among them.
//
// The tests are behind the build tag "wine" and run with
//
//	make test-windows
//
// which make test calls. They need Debian's wine64 and gcc-mingw-w64-x86-64:
// without them the tests skip, saying how to install them, except under
// CI=true, where they fail. Everything they run is built from this
// repository: the Windows binaries, the programs in cmd/, and
// hack/wine/bcryptprimitives.c, the one function Go needs that Wine 8 lacks.
package wine
