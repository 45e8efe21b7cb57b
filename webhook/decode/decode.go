// Package decode reads the Kubernetes objects pipeguard reviews into narrow
// types that hold only the fields pipe access depends on.
//
// Decoding whole Kubernetes objects costs more than deciding on them: a
// general decoder spends most of a review's time on reflection and on
// validating fields nobody reads. Object reads one of the types below with a
// JSON reader written for them. It gives the results sigs.k8s.io/json gives
// (FuzzDecodeMatchesJSON checks this), with one deliberate difference: a
// field it reads may appear only once in an object. The API server never
// sends a repeated field, and refusing one means no two parsers can disagree
// about which copy counts.
//
// Like the API server, the reader matches field names case-sensitively, so
// that a key spelled "HostPath" cannot mean one thing to pipeguard and
// another to Kubernetes; null leaves a field at its zero value; unknown
// fields are checked for syntax and skipped. Strings with \u escapes or
// non-ASCII bytes are unquoted by sigs.k8s.io/json so that their value is
// exactly its value; ASCII strings whose escapes are single characters (the
// doubled backslashes of every Windows path) are unquoted by the reader.
package decode

// Kind is a type Object reads: one per shape of reviewed object, reduced to
// the path from the object to its pod spec or host path.
type Kind interface {
	Pod | Workload | CronJob | PodTemplate | PersistentVolume
}

// Object reads raw, a JSON object or null, as a T and checks that nothing
// but white space follows it. Errors name the field and byte offset at
// which the input went wrong.
func Object[T Kind](raw []byte) (*T, error) {
	o := new(T)
	var read func(r *reader)
	switch v := any(o).(type) {
	case *Pod:
		read = func(r *reader) { r.pod(v) }
	case *Workload:
		read = func(r *reader) { r.workload(v) }
	case *CronJob:
		read = func(r *reader) { r.cronJob(v) }
	case *PodTemplate:
		read = func(r *reader) { r.podTemplate(v) }
	case *PersistentVolume:
		read = func(r *reader) { r.persistentVolume(v) }
	}
	if err := decodeObject(raw, read); err != nil {
		return nil, err
	}
	return o, nil
}
