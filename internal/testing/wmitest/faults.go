package wmitest

import "strings"

// faults are the ReturnValues a test has a method answer instead of
// running it, by Class.Method. They are read by a Method's Run, with the
// provider's lock held, and set with it held too.
type faults struct {
	p     *Provider
	codes map[string]uint32
}

// fail makes every later call of class.method return code without
// running; 0 makes it run again.
func (f *faults) fail(class, method string, code uint32) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if f.codes == nil {
		f.codes = map[string]uint32{}
	}
	k := strings.ToLower(class + "." + method)
	if code == 0 {
		delete(f.codes, k)
		return
	}
	f.codes[k] = code
}

// faulted returns the code set for class.method; for a Method's Run.
func (f *faults) faulted(class, method string) (uint32, bool) {
	code, ok := f.codes[strings.ToLower(class+"."+method)]
	return code, ok
}
