//go:build windows

package wmi

import (
	"context"
	"fmt"
	"strings"
	"sync"

	ole "github.com/go-ole/go-ole"
)

// New returns the host's WMI over COM. It does not contact WMI: the first
// call to a namespace connects to it, and a failed connection is tried
// again by the next call.
func New() (Conn, error) { return comConn{maxObjects: MaxObjects}, nil }

// comConn is the process's WMI connections; every Conn shares them, as
// the worker threads.
type comConn struct {
	maxObjects int // MaxObjects; lowered by a test
}

// service is one namespace's connection.
type service struct {
	lock     chan struct{} // held while connecting
	svc      *object       // IWbemServices, nil until connected; kept for the process's life
	semisync bool          // GetObject and ExecMethod answer through IWbemCallResult
	inproc   bool          // WMI runs in this process: one call at a time
}

// inprocLock is held by the call on a WMI in this process. Windows' WMI
// is a service whose IWbemServices is a proxy, called concurrently; Wine's
// runs its providers in the caller's process and is not safe for
// concurrent calls (two queries of one class free each other's rows).
var inprocLock = make(chan struct{}, 1)

// exclusive waits, under ctx, for the right to call s, and returns its
// release.
func (s *service) exclusive(ctx context.Context) (func(), error) {
	if !s.inproc {
		return func() {}, nil
	}
	select {
	case inprocLock <- struct{}{}:
		return func() { <-inprocLock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// onService runs f on a worker (do) with namespace's connection and the
// right to call it, under ctx.
func onService(ctx context.Context, namespace string, f func(ctx context.Context, s *service) error) error {
	return do(ctx, func(ctx context.Context) error {
		s, err := connect(ctx, namespace)
		if err != nil {
			return err
		}
		release, err := s.exclusive(ctx)
		if err != nil {
			return err
		}
		defer release()
		return f(ctx, s)
	})
}

// callError is the error of op's call that named what and answered hr and
// err: the context's end as it is, a value WMI cannot be given (err,
// such as a string too long for a BSTR), or the call's HRESULT; nil when
// the call succeeded.
func callError(ctx context.Context, op, what string, hr uint32, err error) error {
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		return fmt.Errorf("WMI %s: the %s %w", op, what, err)
	case hr != 0:
		return &Error{Op: op, HRESULT: hr}
	}
	return nil
}

var services struct {
	mu sync.Mutex
	m  map[string]*service
}

// connect returns namespace's connection, connecting under ctx. The
// caller is a worker.
func connect(ctx context.Context, namespace string) (*service, error) {
	if namespace == "" {
		return nil, fmt.Errorf("WMI: no namespace")
	}
	key := strings.ToLower(namespace)
	services.mu.Lock()
	if services.m == nil {
		services.m = map[string]*service{}
	}
	s := services.m[key]
	if s == nil {
		s = &service{lock: make(chan struct{}, 1)}
		services.m[key] = s
	}
	services.mu.Unlock()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.lock }()
	if s.svc != nil {
		return s, nil
	}
	svc, hr, err := connectServer(namespace)
	if err != nil {
		return nil, fmt.Errorf("WMI connect to %s: %w", namespace, err)
	}
	if hr != 0 {
		return nil, &Error{Op: "connect to " + namespace, HRESULT: hr}
	}
	s.semisync = probeSemisync(svc)
	s.inproc = !svc.isProxy()
	s.svc = svc
	return s, nil
}

// queryClass is the class a WQL query reads, for naming it in errors.
func queryClass(wql string) string {
	f := strings.Fields(wql)
	for i := 0; i+1 < len(f); i++ {
		if strings.EqualFold(f[i], "FROM") {
			return f[i+1]
		}
	}
	return ""
}

func (c comConn) Query(ctx context.Context, namespace, wql string) ([]Object, error) {
	op := "query"
	if c := queryClass(wql); c != "" {
		op = "query of " + c
	}
	var out []Object
	err := onService(ctx, namespace, func(ctx context.Context, s *service) error {
		enum, hr, err := s.execQuery(wql)
		if err != nil {
			return fmt.Errorf("WMI %s: the query %w", op, err)
		}
		if hr != 0 {
			return &Error{Op: op, HRESULT: hr}
		}
		defer enum.release()
		var batch [enumBatch]*object
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, more, hr := next(enum, &batch)
			objs := batch[:n]
			for i, o := range objs {
				if err == nil && len(out) == c.maxObjects {
					err = fmt.Errorf("WMI %s returned more than %d objects", op, c.maxObjects)
				}
				if err == nil {
					var obj Object
					if obj, err = readObject(o, 0); err != nil {
						err = fmt.Errorf("WMI %s: %w", op, err)
					}
					out = append(out, obj)
				}
				o.release()
				batch[i] = nil
			}
			if err != nil {
				return err
			}
			if hr != 0 {
				return &Error{Op: op, HRESULT: hr}
			}
			if !more {
				return nil
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (comConn) Get(ctx context.Context, namespace, path string) (Object, error) {
	op := "Get of " + path
	var out Object
	err := onService(ctx, namespace, func(ctx context.Context, s *service) error {
		o, hr, err := s.getObject(ctx, path)
		if err := callError(ctx, op, "path", hr, err); err != nil {
			return err
		}
		defer o.release()
		if out, err = readObject(o, 0); err != nil {
			return fmt.Errorf("WMI %s: %w", op, err)
		}
		return nil
	})
	if err != nil {
		return Object{}, err
	}
	return out, nil
}

// className is the class of an object path: what comes before its keys.
func className(path string) string {
	if i := strings.IndexAny(path, ".="); i >= 0 {
		return path[:i]
	}
	return path
}

func (comConn) Call(ctx context.Context, namespace, path, method string, in ...Param) (Object, error) {
	class := className(path)
	op := class + "." + method
	var out Object
	err := onService(ctx, namespace, func(ctx context.Context, s *service) error {
		cls, hr, err := s.getObject(ctx, class)
		if err := callError(ctx, op, "class name", hr, err); err != nil {
			return err
		}
		defer cls.release()
		sig, hr, err := getMethod(cls, method)
		if err != nil {
			return fmt.Errorf("WMI %s: the method name %w", op, err)
		}
		if hr == WBEMENotFound {
			// The class is there, the method is not: what ExecMethod
			// answers for it, so that IsNotFound tells of objects only.
			hr = WBEMEInvalidMethod
		}
		if hr != 0 {
			return &Error{Op: op, HRESULT: hr}
		}
		var inst *object
		if sig != nil {
			defer sig.release()
			if inst, hr = spawnInstance(sig); hr != 0 {
				return &Error{Op: op, HRESULT: hr}
			}
			defer inst.release()
		}
		for _, p := range in {
			if err := putParam(inst, op, p); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		res, hr, err := s.execMethod(ctx, path, method, inst)
		if err := callError(ctx, op, "path", hr, err); err != nil {
			return err
		}
		if res == nil {
			out = Object{Props: map[string]any{}}
			return nil
		}
		defer res.release()
		if out, err = readObject(res, 0); err != nil {
			return fmt.Errorf("WMI %s: out-parameters: %w", op, err)
		}
		out.Path = ""
		return nil
	})
	if err != nil {
		return Object{}, err
	}
	return out, nil
}

// putParam sets one in-parameter on inst, a new instance of the method's
// in-parameters signature (nil when it takes none). No error holds the
// value: a parameter may be a secret.
func putParam(inst *object, op string, p Param) error {
	if inst == nil {
		return fmt.Errorf("WMI %s has no in-parameter %q: it takes none", op, p.Name)
	}
	var cur ole.VARIANT
	_, hr, err := getProp(inst, p.Name, &cur)
	ole.VariantClear(&cur)
	if err != nil {
		return fmt.Errorf("WMI %s: the parameter name %q %w", op, p.Name, err)
	}
	if hr != 0 {
		return fmt.Errorf("WMI %s has no in-parameter %q", op, p.Name)
	}
	for _, native := range [...]bool{false, true} {
		v, same, err := paramVariant(p.Value, native)
		if err != nil {
			return fmt.Errorf("WMI %s: in-parameter %q: %w", op, p.Name, err)
		}
		hr, err := putProp(inst, p.Name, &v)
		ole.VariantClear(&v)
		if err != nil {
			return fmt.Errorf("WMI %s: in-parameter %q: %w", op, p.Name, err)
		}
		// Windows takes the first encoding; Wine, strict about VARIANT
		// types, may want the second.
		if hr == wbemETypeMismatch && !same && !native {
			continue
		}
		if hr != 0 {
			return &Error{Op: op + " in-parameter " + p.Name, HRESULT: hr}
		}
		return nil
	}
	return nil
}
