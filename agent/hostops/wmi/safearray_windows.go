//go:build windows

package wmi

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	ole "github.com/go-ole/go-ole"
)

// arrayValue converts a one-dimensional SAFEARRAY property of a string,
// uint16 or uint32 array type.
func arrayValue(v *ole.VARIANT, cimType int32) (any, error) {
	psa := *(*unsafe.Pointer)(unsafe.Pointer(&v.Val))
	if psa == nil {
		return nil, nil
	}
	if dims, _, _ := procSafeArrayGetDim.Call(uintptr(psa)); dims != 1 {
		return nil, fmt.Errorf("%s value has %d dimensions, want 1", cimName(cimType), dims)
	}
	var lb, ub int32
	if hr, _, _ := procSafeArrayGetLBound.Call(uintptr(psa), 1, uintptr(unsafe.Pointer(&lb))); failed(hr) {
		return nil, &Error{Op: "reading an array", HRESULT: uint32(hr)}
	}
	if hr, _, _ := procSafeArrayGetUBound.Call(uintptr(psa), 1, uintptr(unsafe.Pointer(&ub))); failed(hr) {
		return nil, &Error{Op: "reading an array", HRESULT: uint32(hr)}
	}
	count := int(ub) - int(lb) + 1
	if count <= 0 {
		count = 0
	}
	if count > MaxValueBytes {
		return nil, fmt.Errorf("%s value has more than %d elements", cimName(cimType), MaxValueBytes)
	}
	var data unsafe.Pointer
	if hr, _, _ := procSafeArrayAccessData.Call(uintptr(psa), uintptr(unsafe.Pointer(&data))); failed(hr) {
		return nil, &Error{Op: "reading an array", HRESULT: uint32(hr)}
	}
	defer procSafeArrayUnaccess.Call(uintptr(psa))
	if count > 0 && data == nil {
		return nil, errors.New("array without data")
	}
	elem := v.VT &^ ole.VT_ARRAY
	// The array's own element size rules: Wine marks uint16 arrays
	// VT_I4 and holds them in two bytes.
	size, _, _ := procSafeArrayGetElemsize.Call(uintptr(psa))
	if elem != ole.VT_BSTR {
		elem = intVT(elem, size)
	}
	mismatch := fmt.Errorf("%s value arrived as an array of VARIANT type 0x%X, which the agent does not read", cimName(cimType), uint16(v.VT&^ole.VT_ARRAY))
	switch cimType &^ cimFlagArray {
	case cimString, cimDatetime, cimReference:
		if elem != ole.VT_BSTR {
			return nil, mismatch
		}
		out := make([]string, 0, count)
		total := 0
		for _, b := range unsafe.Slice((*bstr)(data), count) {
			s, ok := bstrString(b, MaxValueBytes-total)
			if !ok {
				return nil, fmt.Errorf("string array value longer than %d bytes", MaxValueBytes)
			}
			total += len(s)
			out = append(out, s)
		}
		return out, nil
	case cimUint16:
		// An element is read as the CIM type's 16 bits: Windows sends
		// them in VT_I4 elements, Wine in VT_I4 elements whose upper
		// bytes it leaves unset.
		out := make([]uint16, count)
		for i := range out {
			n, ok := arrayInt(data, elem, i)
			if !ok {
				return nil, mismatch
			}
			out[i] = uint16(n)
		}
		return out, nil
	case cimUint32:
		// WMI sends uint32 in VT_I4 elements: their bits are the value.
		out := make([]uint32, count)
		for i := range out {
			n, ok := arrayInt(data, elem, i)
			if !ok || elem == ole.VT_I2 && n < 0 {
				return nil, mismatch
			}
			out[i] = uint32(n)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s, which the agent does not read", cimName(cimType))
}

// intVT is the integer type of an array's elements of size bytes,
// signed as vt says.
func intVT(vt ole.VT, size uintptr) ole.VT {
	signed := vt == ole.VT_I1 || vt == ole.VT_I2 || vt == ole.VT_I4 || vt == ole.VT_I8
	switch size {
	case 1:
		return ole.VT_UI1
	case 2:
		if signed {
			return ole.VT_I2
		}
		return ole.VT_UI2
	case 4:
		if signed {
			return ole.VT_I4
		}
		return ole.VT_UI4
	}
	return vt
}

// arrayInt reads element i of an integer array's data.
func arrayInt(data unsafe.Pointer, vt ole.VT, i int) (int64, bool) {
	switch vt {
	case ole.VT_I2:
		return int64(unsafe.Slice((*int16)(data), i+1)[i]), true
	case ole.VT_UI2:
		return int64(unsafe.Slice((*uint16)(data), i+1)[i]), true
	case ole.VT_I4:
		return int64(unsafe.Slice((*int32)(data), i+1)[i]), true
	case ole.VT_UI4:
		return int64(unsafe.Slice((*uint32)(data), i+1)[i]), true
	case ole.VT_UI1:
		return int64(unsafe.Slice((*uint8)(data), i+1)[i]), true
	}
	return 0, false
}

// paramVariant encodes an in-parameter's value as WMI takes it: uint16 and
// uint32 as VT_I4, 64-bit integers as decimal strings. With native, it is
// the encoding that names the type itself (VT_UI2, VT_UI4, VT_I8, VT_UI8),
// which Wine wants; same reports whether that is the first one. The
// caller clears the variant. Errors name the value's type, never the
// value.
func paramVariant(value any, native bool) (v ole.VARIANT, same bool, err error) {
	switch x := value.(type) {
	case nil:
		return ole.NewVariant(ole.VT_NULL, 0), true, nil
	case string:
		b, err := newBSTR(x)
		if err != nil {
			return v, true, errors.New("the string " + err.Error())
		}
		return bstrVariant(b), true, nil
	case bool:
		if x {
			return ole.NewVariant(ole.VT_BOOL, -1), true, nil // VARIANT_TRUE
		}
		return ole.NewVariant(ole.VT_BOOL, 0), true, nil
	case int32:
		return ole.NewVariant(ole.VT_I4, int64(x)), true, nil
	case uint8:
		return ole.NewVariant(ole.VT_UI1, int64(x)), true, nil
	case uint16:
		if native {
			return ole.NewVariant(ole.VT_UI2, int64(x)), false, nil
		}
		return ole.NewVariant(ole.VT_I4, int64(x)), false, nil
	case uint32:
		if native {
			return ole.NewVariant(ole.VT_UI4, int64(x)), false, nil
		}
		return ole.NewVariant(ole.VT_I4, int64(int32(x))), false, nil
	case int64:
		if native {
			return ole.NewVariant(ole.VT_I8, x), false, nil
		}
		b, _ := newBSTR(strconv.FormatInt(x, 10))
		return bstrVariant(b), false, nil
	case uint64:
		if native {
			return ole.NewVariant(ole.VT_UI8, int64(x)), false, nil
		}
		b, _ := newBSTR(strconv.FormatUint(x, 10))
		return bstrVariant(b), false, nil
	case []string:
		psa, err := stringArray(x)
		if err != nil {
			return v, true, err
		}
		v = ole.NewVariant(ole.VT_ARRAY|ole.VT_BSTR, 0)
		*(*unsafe.Pointer)(unsafe.Pointer(&v.Val)) = psa
		return v, true, nil
	}
	return v, true, fmt.Errorf("values of type %T are not supported", value)
}

func bstrVariant(b bstr) ole.VARIANT {
	v := ole.NewVariant(ole.VT_BSTR, 0)
	*(*bstr)(unsafe.Pointer(&v.Val)) = b
	return v
}

// stringArray makes a SAFEARRAY of BSTRs holding ss.
func stringArray(ss []string) (unsafe.Pointer, error) {
	r, _, _ := procSafeArrayCreateVec.Call(uintptr(ole.VT_BSTR), 0, uintptr(len(ss)))
	psa := *(*unsafe.Pointer)(unsafe.Pointer(&r))
	if psa == nil {
		return nil, errors.New("out of memory for a string array")
	}
	for i, s := range ss {
		b, err := newBSTR(s)
		if err != nil {
			procSafeArrayDestroy.Call(uintptr(psa))
			return nil, fmt.Errorf("string %d %v", i, err)
		}
		idx := int32(i)
		// SafeArrayPutElement copies the BSTR it is given.
		hr, _, _ := procSafeArrayPutElement.Call(uintptr(psa), uintptr(unsafe.Pointer(&idx)), uintptr(unsafe.Pointer(b)))
		freeBSTR(b)
		if failed(hr) {
			procSafeArrayDestroy.Call(uintptr(psa))
			return nil, &Error{Op: "making a string array", HRESULT: uint32(hr)}
		}
	}
	return psa, nil
}
