//go:build windows

package wmi

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	ole "github.com/go-ole/go-ole"
)

// CIM types (wbemcli.h CIMTYPE_ENUMERATION).
const (
	cimSint8     = 16
	cimUint8     = 17
	cimSint16    = 2
	cimUint16    = 18
	cimSint32    = 3
	cimUint32    = 19
	cimSint64    = 20
	cimUint64    = 21
	cimReal32    = 4
	cimReal64    = 5
	cimBoolean   = 11
	cimString    = 8
	cimDatetime  = 101
	cimReference = 102
	cimChar16    = 103
	cimObject    = 13
	cimFlagArray = 0x2000
)

var cimNames = map[int32]string{
	cimSint8: "sint8", cimUint8: "uint8", cimSint16: "sint16", cimUint16: "uint16",
	cimSint32: "sint32", cimUint32: "uint32", cimSint64: "sint64", cimUint64: "uint64",
	cimReal32: "real32", cimReal64: "real64", cimBoolean: "boolean", cimString: "string",
	cimDatetime: "datetime", cimReference: "reference", cimChar16: "char16", cimObject: "object",
}

func cimName(t int32) string {
	base := cimNames[t&^cimFlagArray]
	if base == "" {
		base = fmt.Sprintf("CIM type %d", t&^cimFlagArray)
	}
	if t&cimFlagArray != 0 {
		return base + "[]"
	}
	return base
}

// maxDepth bounds embedded objects within embedded objects.
const maxDepth = 4

// readObject converts o: its class, relative path and non-system
// properties.
func readObject(o *object, depth int) (Object, error) {
	var out Object
	for _, sys := range [...]struct {
		name string
		dst  *string
	}{{"__CLASS", &out.Class}, {"__RELPATH", &out.Path}} {
		var v ole.VARIANT
		_, hr, err := getProp(o, sys.name, &v)
		if err != nil {
			return Object{}, err
		}
		if hr == 0 && v.VT == ole.VT_BSTR {
			s, ok := bstrString(variantBSTR(&v), MaxValueBytes)
			if !ok {
				ole.VariantClear(&v)
				return Object{}, fmt.Errorf("property %s is longer than %d bytes", sys.name, MaxValueBytes)
			}
			*sys.dst = s
		}
		ole.VariantClear(&v)
	}
	out.Props = map[string]any{}
	hr, err := props(o, func(name bstr, v *ole.VARIANT, cimType int32) error {
		n, ok := bstrString(name, MaxValueBytes)
		if !ok {
			return fmt.Errorf("a property name is longer than %d bytes", MaxValueBytes)
		}
		if strings.HasPrefix(n, "__") {
			return nil
		}
		val, err := value(v, cimType, depth)
		if err != nil {
			return fmt.Errorf("property %s: %w", n, err)
		}
		out.Props[n] = val
		return nil
	})
	if err != nil {
		return Object{}, err
	}
	if hr != 0 {
		return Object{}, &Error{Op: "reading the properties of " + out.Class, HRESULT: hr}
	}
	return out, nil
}

// variantBSTR is the BSTR a VT_BSTR variant holds.
func variantBSTR(v *ole.VARIANT) bstr { return *(*bstr)(unsafe.Pointer(&v.Val)) }

// variantObject is the interface pointer a VT_UNKNOWN or VT_DISPATCH
// variant holds.
func variantObject(v *ole.VARIANT) *object { return *(**object)(unsafe.Pointer(&v.Val)) }

// value converts one property by its CIM type: WMI sends uint16 and
// uint32 as VT_I4 and 64-bit integers as decimal strings, Wine sends them
// as VT_UI2, VT_UI4, VT_I8 and VT_UI8; both are read.
func value(v *ole.VARIANT, cimType int32, depth int) (any, error) {
	if v.VT == ole.VT_NULL || v.VT == ole.VT_EMPTY {
		return nil, nil
	}
	mismatch := func() error {
		return fmt.Errorf("%s value arrived as VARIANT type 0x%X, which the agent does not read", cimName(cimType), uint16(v.VT))
	}
	if cimType&cimFlagArray != 0 {
		if v.VT&ole.VT_ARRAY == 0 {
			return nil, mismatch()
		}
		return arrayValue(v, cimType)
	}
	n, isInt := intValue(v)
	switch cimType {
	case cimString, cimDatetime, cimReference:
		if v.VT != ole.VT_BSTR {
			return nil, mismatch()
		}
		s, ok := bstrString(variantBSTR(v), MaxValueBytes)
		if !ok {
			return nil, fmt.Errorf("string value longer than %d bytes", MaxValueBytes)
		}
		return s, nil
	case cimBoolean:
		if v.VT != ole.VT_BOOL {
			return nil, mismatch()
		}
		return int16(v.Val) != 0, nil
	case cimUint8:
		if isInt && n >= 0 && n <= 0xFF {
			return uint8(n), nil
		}
	case cimSint8, cimSint16, cimSint32:
		// sint8 and sint16 widen to int32.
		if isInt && n >= -1<<31 && n <= 1<<31-1 {
			return int32(n), nil
		}
	case cimUint16, cimChar16:
		if v.VT == ole.VT_I2 { // a uint16 sent as a VT_I2's bits
			return uint16(int16(v.Val)), nil
		}
		if isInt && n >= 0 && n <= 0xFFFF {
			return uint16(n), nil
		}
	case cimUint32:
		if v.VT == ole.VT_I4 { // WMI sends uint32 as a VT_I4's bits
			return uint32(int32(v.Val)), nil
		}
		if isInt && n >= 0 && n <= 1<<32-1 {
			return uint32(n), nil
		}
	case cimSint64:
		if v.VT == ole.VT_BSTR {
			return parseInt(variantBSTR(v), func(s string) (any, error) { return strconv.ParseInt(s, 10, 64) })
		}
		if isInt {
			return n, nil
		}
	case cimUint64:
		if v.VT == ole.VT_BSTR {
			return parseInt(variantBSTR(v), func(s string) (any, error) { return strconv.ParseUint(s, 10, 64) })
		}
		if v.VT == ole.VT_UI8 || v.VT == ole.VT_I8 {
			return uint64(v.Val), nil
		}
		if isInt && n >= 0 {
			return uint64(n), nil
		}
	case cimObject:
		if v.VT != ole.VT_UNKNOWN && v.VT != ole.VT_DISPATCH {
			return nil, mismatch()
		}
		return embedded(variantObject(v), depth)
	default:
		return nil, fmt.Errorf("%s, which the agent does not read", cimName(cimType))
	}
	return nil, mismatch()
}

// intValue reads an integer variant.
func intValue(v *ole.VARIANT) (int64, bool) {
	switch v.VT {
	case ole.VT_I1:
		return int64(int8(v.Val)), true
	case ole.VT_UI1:
		return int64(uint8(v.Val)), true
	case ole.VT_I2:
		return int64(int16(v.Val)), true
	case ole.VT_UI2:
		return int64(uint16(v.Val)), true
	case ole.VT_I4:
		return int64(int32(v.Val)), true
	case ole.VT_UI4:
		return int64(uint32(v.Val)), true
	case ole.VT_I8:
		return v.Val, true
	}
	return 0, false
}

func parseInt(b bstr, parse func(string) (any, error)) (any, error) {
	s, ok := bstrString(b, 32)
	if !ok {
		return nil, fmt.Errorf("64-bit integer string longer than 32 bytes")
	}
	n, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("64-bit integer %q: %w", s, err)
	}
	return n, nil
}

// embedded converts an embedded object.
func embedded(unk *object, depth int) (any, error) {
	if unk == nil {
		return nil, nil
	}
	if depth >= maxDepth {
		return nil, fmt.Errorf("embedded objects nested deeper than %d", maxDepth)
	}
	o, hr := unk.queryInterface(iidIWbemClassObject)
	if hr != 0 {
		return nil, &Error{Op: "reading an embedded object", HRESULT: hr}
	}
	defer o.release()
	return readObject(o, depth+1)
}
