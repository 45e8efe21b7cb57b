package wmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The namespaces the agent uses, as CSI Proxy 1.3 does.
const (
	// NamespaceCIMv2 holds the Win32_* classes (Win32_BIOS, StdRegProv).
	NamespaceCIMv2 = `root\cimv2`
	// NamespaceStorage holds the storage management classes: MSFT_Disk,
	// MSFT_Partition, MSFT_Volume, MSFT_StorageSetting and the MSFT_iSCSI*
	// classes.
	NamespaceStorage = `root\Microsoft\Windows\Storage`
	// NamespaceSMB holds MSFT_SmbGlobalMapping.
	NamespaceSMB = `root\Microsoft\Windows\SMB`
)

// Bounds of what a Conn returns, so that a provider cannot have the agent
// hold an unbounded answer.
const (
	// MaxObjects is how many objects one query returns at most; a query
	// that would return more fails.
	MaxObjects = 4096
	// MaxValueBytes is the size of one string value at most (a string
	// array's strings together); a longer one fails the call.
	MaxValueBytes = 64 << 10
)

// Workers is how many OS threads run the process's WMI calls on Windows: a
// call takes one for its length, and waits for one, within its deadline,
// while all are busy. It is as many as the host-call slots of the groups
// that call WMI (disk, volume, smb and iscsi, 8 each), so that the groups'
// slots, which one caller holds only its share of, are the one queue: hung
// calls of one group or caller never leave the others without a thread.
const Workers = 32

// Object is a WMI object: an instance or class a query or Get returns, or
// the out-parameters of a method call.
type Object struct {
	// Class is the object's class (__CLASS), e.g. "MSFT_Disk".
	Class string
	// Path is the object's relative path (__RELPATH), which Call takes to
	// run an instance method on it; empty for out-parameters.
	Path string
	// Props are its properties by name. A value is nil (NULL), a string,
	// a bool, an int32 (sint32, and sint8 and sint16 widened), an int64
	// (sint64), a uint8, a uint16, a uint32, a uint64 (uint64 and
	// CIM_UINT64 strings), a []string, a []uint16, a []uint32, or an
	// Object (an embedded object, such as a method's ExtendedStatus).
	Props map[string]any
}

// Param is a method's in-parameter.
type Param struct {
	Name  string
	Value any
}

// Conn is a connection to the host's WMI service. Every call returns when
// ctx ends, whether or not the provider has finished: WMI cannot cancel a
// provider's work, so the operation may still complete on the host after
// the call has returned with ctx's error (the groups hold the volume,
// disk or share until it settles, see agent/groups/inflight).
type Conn interface {
	// Query runs a WQL query in namespace and returns its objects, at
	// most MaxObjects. Values in it must come from Quote.
	Query(ctx context.Context, namespace, wql string) ([]Object, error)
	// Get returns the class or instance at path in namespace; a missing
	// one is an error that IsNotFound reports.
	Get(ctx context.Context, namespace, path string) (Object, error)
	// Call runs method on the instance or class at path with the
	// in-parameters, and returns its out-parameters, ReturnValue among
	// them (see Result). Secrets travel only as in-parameters.
	Call(ctx context.Context, namespace, path, method string, in ...Param) (Object, error)
}

// Quote returns s as a WQL string literal: in single quotes, with
// backslashes and quotes escaped by a backslash. It refuses what WQL
// cannot hold as data: NUL, other control characters and invalid UTF-8.
func Quote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("WQL value %q is not valid UTF-8", s)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			return "", fmt.Errorf("WQL value %q holds the control character %U", s, r)
		case r == '\\' || r == '\'' || r == '"':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// Error is a failed WMI call: its HRESULT, a WBEM_E_* code or a COM one.
type Error struct {
	// Op names the call, e.g. "query of MSFT_Disk" or "MSFT_Disk.Online".
	Op string
	// HRESULT is the code the call returned.
	HRESULT uint32
}

func (e *Error) Error() string {
	if name := hresultNames[e.HRESULT]; name != "" {
		return fmt.Sprintf("WMI %s failed: %s (0x%08X)", e.Op, name, e.HRESULT)
	}
	return fmt.Sprintf("WMI %s failed with 0x%08X", e.Op, e.HRESULT)
}

// The WBEM_E_* codes the agent tells apart (WbemErrorEnum).
const (
	WBEMEFailed         uint32 = 0x80041001
	WBEMENotFound       uint32 = 0x80041002
	WBEMEAccessDenied   uint32 = 0x80041003
	WBEMEInvalidParam   uint32 = 0x80041008
	WBEMEInvalidClass   uint32 = 0x80041010
	WBEMENotSupported   uint32 = 0x8004100C
	WBEMEInvalidQuery   uint32 = 0x80041017
	WBEMEInvalidMethod  uint32 = 0x8004102E
	WBEMEInvalidNS      uint32 = 0x8004100E
	WBEMETimedOut       uint32 = 0x80043001
	WBEMEInvalidObjPath uint32 = 0x8004103A
)

var hresultNames = map[uint32]string{
	WBEMEFailed:         "WBEM_E_FAILED",
	WBEMENotFound:       "WBEM_E_NOT_FOUND",
	WBEMEAccessDenied:   "WBEM_E_ACCESS_DENIED",
	WBEMEInvalidParam:   "WBEM_E_INVALID_PARAMETER",
	WBEMEInvalidClass:   "WBEM_E_INVALID_CLASS",
	WBEMENotSupported:   "WBEM_E_NOT_SUPPORTED",
	WBEMEInvalidQuery:   "WBEM_E_INVALID_QUERY",
	WBEMEInvalidMethod:  "WBEM_E_INVALID_METHOD",
	WBEMEInvalidNS:      "WBEM_E_INVALID_NAMESPACE",
	WBEMETimedOut:       "WBEM_E_TIMED_OUT",
	WBEMEInvalidObjPath: "WBEM_E_INVALID_OBJECT_PATH",
}

// IsNotFound reports whether err is a WMI call that found no such object.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.HRESULT == WBEMENotFound || e.HRESULT == WBEMEInvalidObjPath)
}

// MethodError is a method that ran and returned a non-zero ReturnValue.
type MethodError struct {
	// Op names the method, e.g. "MSFT_Disk.Initialize".
	Op string
	// Code is its ReturnValue.
	Code uint32
	// Text is the code's documented meaning, "" when unknown.
	Text string
	// Status is the message of its ExtendedStatus out-parameter (an
	// MSFT_StorageExtendedStatus), when it has one.
	Status string
}

func (e *MethodError) Error() string {
	msg := fmt.Sprintf("%s returned %d", e.Op, e.Code)
	if e.Text != "" {
		msg += " (" + e.Text + ")"
	}
	if e.Status != "" {
		msg += ": " + e.Status
	}
	return msg
}

// CommonReturnCodes are the return values the storage management
// methods share (MSFT_Disk, MSFT_Partition, MSFT_Volume and others, in
// Microsoft's documentation of each method); a method's own codes are
// passed to Result beside them (Codes).
var CommonReturnCodes = map[uint32]string{
	1:     "Not Supported",
	2:     "Unspecified Error",
	3:     "Timeout",
	4:     "Failed",
	5:     "Invalid Parameter",
	40001: "Access denied",
	40002: "There are not enough resources to complete the operation",
	40003: "Cache out of date",
}

// Codes are a method's documented ReturnValue codes and what each means.
type Codes struct {
	// Text gives the meaning of each code.
	Text map[uint32]string
	// NoCommon says the method's class does not share the storage
	// management codes (CommonReturnCodes), whose numbers mean other
	// things there (SMB, iSCSI): a code Text leaves out is reported by
	// its number alone.
	NoCommon bool
}

// Result reads a method's ReturnValue from out: nil for 0, else a
// *MethodError naming op, the code and its documented meaning, from
// codes.Text or else CommonReturnCodes. A missing or mistyped
// ReturnValue is an error too: an answer never reads as success by
// default.
func Result(op string, out Object, codes Codes) error {
	v, ok := out.Props["ReturnValue"]
	if !ok {
		return fmt.Errorf("%s returned no ReturnValue", op)
	}
	code, ok := Uint32(v)
	if !ok {
		return fmt.Errorf("%s returned ReturnValue %v (%T), want an unsigned integer", op, v, v)
	}
	if code == 0 {
		return nil
	}
	e := &MethodError{Op: op, Code: code, Text: codes.Text[code]}
	if e.Text == "" && !codes.NoCommon {
		e.Text = CommonReturnCodes[code]
	}
	// ExtendedStatus is documented as a string holding an embedded
	// MSFT_StorageExtendedStatus; a Conn hands it over as the Object it
	// decodes, or as the string when it cannot.
	switch st := out.Props["ExtendedStatus"].(type) {
	case Object:
		if m, ok := st.Props["Message"].(string); ok {
			e.Status = m
		}
	case string:
		e.Status = st
	}
	if len(e.Status) > 1024 {
		e.Status = e.Status[:1024] + "..."
	}
	return e
}

// Uint32 reads an unsigned integer value of at most 32 bits.
func Uint32(v any) (uint32, bool) {
	switch x := v.(type) {
	case uint8:
		return uint32(x), true
	case uint16:
		return uint32(x), true
	case uint32:
		return x, true
	case int32:
		if x >= 0 {
			return uint32(x), true
		}
	case uint64:
		if x <= 1<<32-1 {
			return uint32(x), true
		}
	case int64:
		if x >= 0 && x <= 1<<32-1 {
			return uint32(x), true
		}
	}
	return 0, false
}
