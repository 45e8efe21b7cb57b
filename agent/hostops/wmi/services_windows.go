//go:build windows

package wmi

import (
	"context"
	"syscall"
	"unsafe"

	ole "github.com/go-ole/go-ole"
)

// pollMillis is how long one wait on WMI blocks a worker before it looks
// at the call's context again.
const pollMillis = 50

// probeSemisync reports whether svc makes GetObject and ExecMethod
// semisynchronous (WBEM_FLAG_RETURN_IMMEDIATELY, answering through an
// IWbemCallResult), by a GetObject of the NULL path: a new empty class,
// made without a provider. Windows' WMI does; Wine's ignores the flag,
// answers synchronously and leaves the IWbemCallResult unset, so that a
// call there must ask for its result synchronously.
func probeSemisync(svc *object) bool {
	// First with both out-parameters, for Wine writes the object whatever
	// the flags say.
	var obj, cr *object
	hr, _, _ := syscall.SyscallN(svc.vtbl[servicesGetObject], uintptr(unsafe.Pointer(svc)),
		0, wbemFlagReturnImmediately, 0,
		uintptr(unsafe.Pointer(&obj)), uintptr(unsafe.Pointer(&cr)))
	obj.release()
	if cr != nil {
		cr.release()
		return true
	}
	if !failed(hr) {
		return false
	}
	// Refused for being asked for the object too: ask as documented,
	// for the IWbemCallResult alone.
	syscall.SyscallN(svc.vtbl[servicesGetObject], uintptr(unsafe.Pointer(svc)),
		0, wbemFlagReturnImmediately, 0,
		0, uintptr(unsafe.Pointer(&cr)))
	if cr != nil {
		cr.release()
		return true
	}
	return false
}

// getObject returns the object at path, or the failed HRESULT.
func (s *service) getObject(ctx context.Context, path string) (*object, uint32, error) {
	p, err := newBSTR(path)
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(p)
	if s.semisync {
		var cr *object
		hr, _, _ := syscall.SyscallN(s.svc.vtbl[servicesGetObject], uintptr(unsafe.Pointer(s.svc)),
			uintptr(unsafe.Pointer(p)), wbemFlagReturnImmediately, 0,
			0, uintptr(unsafe.Pointer(&cr)))
		if failed(hr) {
			return nil, uint32(hr), nil
		}
		defer cr.release()
		return waitResult(ctx, cr)
	}
	var obj *object
	hr, _, _ := syscall.SyscallN(s.svc.vtbl[servicesGetObject], uintptr(unsafe.Pointer(s.svc)),
		uintptr(unsafe.Pointer(p)), 0, 0,
		uintptr(unsafe.Pointer(&obj)), 0)
	if failed(hr) {
		return nil, uint32(hr), nil
	}
	return obj, 0, nil
}

// execMethod runs method on path with in (nil for none) and returns its
// out-parameters.
func (s *service) execMethod(ctx context.Context, path, method string, in *object) (*object, uint32, error) {
	p, err := newBSTR(path)
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(p)
	m, err := newBSTR(method)
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(m)
	if s.semisync {
		var cr *object
		hr, _, _ := syscall.SyscallN(s.svc.vtbl[servicesExecMethod], uintptr(unsafe.Pointer(s.svc)),
			uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(m)), wbemFlagReturnImmediately, 0,
			uintptr(unsafe.Pointer(in)), 0, uintptr(unsafe.Pointer(&cr)))
		if failed(hr) {
			return nil, uint32(hr), nil
		}
		defer cr.release()
		return waitResult(ctx, cr)
	}
	var out *object
	hr, _, _ := syscall.SyscallN(s.svc.vtbl[servicesExecMethod], uintptr(unsafe.Pointer(s.svc)),
		uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(m)), 0, 0,
		uintptr(unsafe.Pointer(in)), uintptr(unsafe.Pointer(&out)), 0)
	if failed(hr) {
		return nil, uint32(hr), nil
	}
	return out, 0, nil
}

// waitResult waits for a semisynchronous call's object in short waits,
// and gives up at ctx's end (the call goes on in WMI; releasing cr lets
// WMI drop its result).
func waitResult(ctx context.Context, cr *object) (*object, uint32, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		var obj *object
		hr, _, _ := syscall.SyscallN(cr.vtbl[callResultGetResultObject], uintptr(unsafe.Pointer(cr)),
			pollMillis, uintptr(unsafe.Pointer(&obj)))
		switch {
		case uint32(hr) == wbemSTimedOut:
			obj.release() // none is returned with it; be sure
		case failed(hr):
			return nil, uint32(hr), nil
		default:
			return obj, 0, nil
		}
	}
}

// execQuery starts a WQL query, semisynchronous and forward-only: the
// enumerator's Next returns objects as the provider makes them.
func (s *service) execQuery(wql string) (*object, uint32, error) {
	lang, err := newBSTR("WQL")
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(lang)
	q, err := newBSTR(wql)
	if err != nil {
		return nil, 0, err
	}
	defer freeBSTR(q)
	var enum *object
	hr, _, _ := syscall.SyscallN(s.svc.vtbl[servicesExecQuery], uintptr(unsafe.Pointer(s.svc)),
		uintptr(unsafe.Pointer(lang)), uintptr(unsafe.Pointer(q)),
		wbemFlagReturnImmediately|wbemFlagForwardOnly, 0, uintptr(unsafe.Pointer(&enum)))
	if failed(hr) {
		return nil, uint32(hr), nil
	}
	if hr := setBlanket(enum); hr != 0 {
		enum.release()
		return nil, hr, nil
	}
	return enum, 0, nil
}

// enumBatch is how many objects one IEnumWbemClassObject::Next asks for.
const enumBatch = 16

// next returns the enumerator's next objects, waiting pollMillis at most:
// none with more false at the end, none with more true when the wait
// ran out.
func next(enum *object, objs *[enumBatch]*object) (n int, more bool, hr uint32) {
	var got uint32
	r, _, _ := syscall.SyscallN(enum.vtbl[enumNext], uintptr(unsafe.Pointer(enum)),
		pollMillis, enumBatch, uintptr(unsafe.Pointer(&objs[0])), uintptr(unsafe.Pointer(&got)))
	if got > enumBatch {
		got = enumBatch
	}
	switch {
	case failed(r):
		return int(got), false, uint32(r)
	case uint32(r) == wbemSTimedOut:
		return int(got), true, 0
	case uint32(r) == wbemSFalse:
		return int(got), false, 0
	}
	return int(got), true, 0
}

// getProp reads the property name of o with its CIM type; the caller
// clears v.
func getProp(o *object, name string, v *ole.VARIANT) (cimType int32, hr uint32, err error) {
	n, err := wideName(name)
	if err != nil {
		return 0, 0, err
	}
	r, _, _ := syscall.SyscallN(o.vtbl[objectGet], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(n)), 0, uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(&cimType)), 0)
	if failed(r) {
		return 0, uint32(r), nil
	}
	return cimType, 0, nil
}

// putProp sets the property name of the instance o to v.
func putProp(o *object, name string, v *ole.VARIANT) (uint32, error) {
	n, err := wideName(name)
	if err != nil {
		return 0, err
	}
	r, _, _ := syscall.SyscallN(o.vtbl[objectPut], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(n)), 0, uintptr(unsafe.Pointer(v)), 0)
	if failed(r) {
		return uint32(r), nil
	}
	return 0, nil
}

// spawnInstance returns a new instance of the class o.
func spawnInstance(o *object) (*object, uint32) {
	var inst *object
	r, _, _ := syscall.SyscallN(o.vtbl[objectSpawnInstance], uintptr(unsafe.Pointer(o)),
		0, uintptr(unsafe.Pointer(&inst)))
	if failed(r) {
		return nil, uint32(r)
	}
	return inst, 0
}

// getMethod returns the in-parameters signature of the class o's method,
// nil for a method that takes none.
func getMethod(o *object, method string) (*object, uint32, error) {
	n, err := wideName(method)
	if err != nil {
		return nil, 0, err
	}
	var in *object
	r, _, _ := syscall.SyscallN(o.vtbl[objectGetMethod], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(n)), 0, uintptr(unsafe.Pointer(&in)), 0)
	if failed(r) {
		return nil, uint32(r), nil
	}
	return in, 0, nil
}

// props calls f with each non-system property of o, in order, with its
// CIM type; f must not keep v, which is cleared after it.
func props(o *object, f func(name bstr, v *ole.VARIANT, cimType int32) error) (uint32, error) {
	r, _, _ := syscall.SyscallN(o.vtbl[objectBeginEnumeration], uintptr(unsafe.Pointer(o)), wbemFlagNonsystemOnly)
	if failed(r) {
		return uint32(r), nil
	}
	defer syscall.SyscallN(o.vtbl[objectEndEnumeration], uintptr(unsafe.Pointer(o)))
	for {
		var name bstr
		var v ole.VARIANT
		var cimType int32
		r, _, _ := syscall.SyscallN(o.vtbl[objectNext], uintptr(unsafe.Pointer(o)), 0,
			uintptr(unsafe.Pointer(&name)), uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&cimType)), 0)
		if uint32(r) == wbemSNoMoreData {
			return 0, nil
		}
		if failed(r) {
			return uint32(r), nil
		}
		err := f(name, &v, cimType)
		ole.VariantClear(&v)
		freeBSTR(name)
		if err != nil {
			return 0, err
		}
	}
}
