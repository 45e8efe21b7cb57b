//go:build windows

package wmi

import (
	"errors"
	"syscall"
	"unicode/utf16"
	"unsafe"

	ole "github.com/go-ole/go-ole"
	"golang.org/x/sys/windows"
)

// The COM classes and interfaces of WMI (wbemcli.h).
var (
	clsidWbemLocator    = ole.NewGUID("{4590f811-1d3a-11d0-891f-00aa004b2e24}")
	iidIWbemLocator     = ole.NewGUID("{dc12a687-737f-11cf-884d-00aa004b2e24}")
	iidIWbemClassObject = ole.NewGUID("{dc12a681-737f-11cf-884d-00aa004b2e24}")
	// IMultiQI, which every COM proxy implements (objidl.h).
	iidIMultiQI = ole.NewGUID("{00000020-0000-0000-C000-000000000046}")
)

// Vtable indices, in wbemcli.h's order; 0-2 are IUnknown's
// QueryInterface, AddRef and Release.
const (
	vtQueryInterface = 0
	vtRelease        = 2

	// IWbemLocator
	locatorConnectServer = 3

	// IWbemServices
	servicesGetObject  = 6
	servicesExecQuery  = 20
	servicesExecMethod = 24

	// IEnumWbemClassObject
	enumNext = 4

	// IWbemCallResult
	callResultGetResultObject = 3

	// IWbemClassObject
	objectGet              = 4
	objectPut              = 5
	objectBeginEnumeration = 8
	objectNext             = 9
	objectEndEnumeration   = 10
	objectSpawnInstance    = 15
	objectGetMethod        = 19
)

// WBEM flags and status codes (wbemcli.h).
const (
	wbemFlagReturnImmediately        = 0x10
	wbemFlagForwardOnly              = 0x20
	wbemFlagNonsystemOnly            = 0x40
	wbemFlagConnectUseMaxWait        = 0x80
	wbemSFalse                       = 0x1
	wbemSTimedOut                    = 0x40004
	wbemSNoMoreData                  = 0x40005
	wbemETypeMismatch         uint32 = 0x80041005
)

// COM security (rpcdce.h, objidl.h).
const (
	rpcCAuthnLevelPktPrivacy        = 6
	rpcCImpLevelImpersonate         = 3
	rpcCAuthnWinNT                  = 10
	rpcCAuthzNone                   = 0
	eoacNone                        = 0
	rpcETooLate              uint32 = 0x80010119
	eNoInterface             uint32 = 0x80004002
	sFalse                   uint32 = 1
)

var (
	modole32                 = windows.NewLazySystemDLL("ole32.dll")
	modoleaut32              = windows.NewLazySystemDLL("oleaut32.dll")
	procCoInitializeSecurity = modole32.NewProc("CoInitializeSecurity")
	procCoSetProxyBlanket    = modole32.NewProc("CoSetProxyBlanket")
	procSysAllocStringLen    = modoleaut32.NewProc("SysAllocStringLen")
	procSafeArrayCreateVec   = modoleaut32.NewProc("SafeArrayCreateVector")
	procSafeArrayPutElement  = modoleaut32.NewProc("SafeArrayPutElement")
	procSafeArrayDestroy     = modoleaut32.NewProc("SafeArrayDestroy")
	procSafeArrayGetLBound   = modoleaut32.NewProc("SafeArrayGetLBound")
	procSafeArrayGetUBound   = modoleaut32.NewProc("SafeArrayGetUBound")
	procSafeArrayAccessData  = modoleaut32.NewProc("SafeArrayAccessData")
	procSafeArrayUnaccess    = modoleaut32.NewProc("SafeArrayUnaccessData")
	procSafeArrayGetDim      = modoleaut32.NewProc("SafeArrayGetDim")
	procSafeArrayGetElemsize = modoleaut32.NewProc("SafeArrayGetElemsize")
)

// object is a COM interface pointer: a pointer to its vtable. The memory
// is COM's; Go only reads the vtable through it.
type object struct {
	vtbl *[32]uintptr
}

func (o *object) release() {
	if o != nil {
		syscall.SyscallN(o.vtbl[vtRelease], uintptr(unsafe.Pointer(o)))
	}
}

// queryInterface returns o's interface iid, or nil with the HRESULT.
func (o *object) queryInterface(iid *ole.GUID) (*object, uint32) {
	var out *object
	hr, _, _ := syscall.SyscallN(o.vtbl[vtQueryInterface], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(iid)), uintptr(unsafe.Pointer(&out)))
	if failed(hr) {
		return nil, uint32(hr)
	}
	return out, 0
}

// isProxy reports whether o is a COM proxy to another process, as
// Windows' WMI service is, rather than an object in this one (Wine's).
func (o *object) isProxy() bool {
	p, hr := o.queryInterface(iidIMultiQI)
	if hr != 0 {
		return false
	}
	p.release()
	return true
}

// failed reports whether an HRESULT is an error (its severity bit set).
func failed(hr uintptr) bool { return uint32(hr)&0x80000000 != 0 }

// errNUL is a string COM would cut at its first NUL.
var errNUL = errors.New("holds a NUL character")

// bstr is a BSTR the caller frees with freeBSTR.
type bstr = *uint16

// newBSTR allocates s as a BSTR; a NUL in s is refused, for a provider
// would read the string only up to it.
func newBSTR(s string) (bstr, error) {
	u := utf16.Encode([]rune(s))
	for _, c := range u {
		if c == 0 {
			return nil, errNUL
		}
	}
	var p *uint16
	if len(u) > 0 {
		p = &u[0]
	}
	r, _, _ := procSysAllocStringLen.Call(uintptr(unsafe.Pointer(p)), uintptr(len(u)))
	if r == 0 {
		return nil, errors.New("out of memory for a BSTR")
	}
	return *(*bstr)(unsafe.Pointer(&r)), nil
}

func freeBSTR(b bstr) {
	if b != nil {
		ole.SysFreeString((*int16)(unsafe.Pointer(b)))
	}
}

// bstrLen is the length of b in UTF-16 code units.
func bstrLen(b bstr) int {
	if b == nil {
		return 0
	}
	return int(ole.SysStringLen((*int16)(unsafe.Pointer(b))))
}

// bstrString reads b up to its first NUL (CIM strings hold none; Wine
// pads some BSTRs with NULs), refusing one longer than limit bytes of
// UTF-8 (ok false).
func bstrString(b bstr, limit int) (string, bool) {
	n := bstrLen(b)
	if n == 0 {
		return "", true
	}
	u := unsafe.Slice(b, n)
	for i, c := range u {
		if c == 0 {
			u = u[:i]
			break
		}
	}
	if len(u) > limit { // each code unit is one UTF-8 byte at least
		return "", false
	}
	s := string(utf16.Decode(u))
	return s, len(s) <= limit
}

// wideName is a property or method name as COM's LPCWSTR.
func wideName(s string) (*uint16, error) {
	p, err := windows.UTF16PtrFromString(s)
	if err != nil {
		return nil, errNUL
	}
	return p, nil
}

// initSecurity sets the process's COM security: packet privacy (signed
// and encrypted calls) with impersonation. A process whose security is
// already set (RPC_E_TOO_LATE) keeps it.
func initSecurity() uint32 {
	hr, _, _ := procCoInitializeSecurity.Call(
		0,           // pSecDesc
		^uintptr(0), // cAuthSvc: -1, COM chooses
		0,           // asAuthSvc
		0,           // pReserved1
		rpcCAuthnLevelPktPrivacy,
		rpcCImpLevelImpersonate,
		0, // pAuthList
		eoacNone,
		0) // pReserved3
	if failed(hr) && uint32(hr) != rpcETooLate {
		return uint32(hr)
	}
	return 0
}

// setBlanket sets packet privacy and impersonation on a proxy. An object
// that is no proxy (E_NOINTERFACE: it lives in this process, as Wine's
// WMI does) has no calls to secure.
func setBlanket(o *object) uint32 {
	hr, _, _ := procCoSetProxyBlanket.Call(uintptr(unsafe.Pointer(o)),
		rpcCAuthnWinNT, rpcCAuthzNone, 0,
		rpcCAuthnLevelPktPrivacy, rpcCImpLevelImpersonate, 0, eoacNone)
	if failed(hr) && uint32(hr) != eNoInterface {
		return uint32(hr)
	}
	return 0
}

// connectServer connects to namespace on this host and returns its
// IWbemServices, secured by setBlanket.
func connectServer(namespace string) (*object, uint32, error) {
	unk, err := ole.CreateInstance(clsidWbemLocator, iidIWbemLocator)
	if err != nil {
		var oe *ole.OleError
		if errors.As(err, &oe) {
			return nil, uint32(oe.Code()), nil
		}
		return nil, 0, err
	}
	loc := (*object)(unsafe.Pointer(unk))
	defer loc.release()
	ns, err := newBSTR(namespace)
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(ns)
	var svc *object
	// WBEM_FLAG_CONNECT_USE_MAX_WAIT: the connection is made or refused
	// within two minutes.
	hr, _, _ := syscall.SyscallN(loc.vtbl[locatorConnectServer], uintptr(unsafe.Pointer(loc)),
		uintptr(unsafe.Pointer(ns)), 0, 0, 0, wbemFlagConnectUseMaxWait, 0, 0,
		uintptr(unsafe.Pointer(&svc)))
	if failed(hr) {
		return nil, uint32(hr), nil
	}
	if hr := setBlanket(svc); hr != 0 {
		svc.release()
		return nil, hr, nil
	}
	return svc, 0, nil
}
