package pipepath

import "strings"

// Class says what a host path refers to.
type Class string

const (
	NotPipe   Class = "none"      // an ordinary file system path
	Pipe      Class = "pipe"      // a named pipe whose name was resolved confidently
	Ambiguous Class = "ambiguous" // looks like a pipe (or the pipe namespace) but cannot be resolved confidently
)

// Result is the verdict on one host path.
type Result struct {
	Class Class
	// Pipe is, for Class Pipe, the pipe name in canonical form: case-folded to
	// lower case, `\` separators, no prefix, e.g. "csi-proxy-disk-v1".
	// Empty otherwise.
	Pipe string
	// Normalized is, for Class Pipe, `\\.\pipe\` + Pipe. Otherwise it is a
	// cleaned, lower-cased, `\`-separated rendering of the input for
	// messages; control and invisible characters in it are shown as U+FFFD.
	Normalized string
	// Reason says, for Class Ambiguous, why the path could not be resolved.
	Reason string
}

// PipePrefix is the spelling of the pipe namespace in Result.Normalized.
const PipePrefix = `\\.\pipe\`

// Reasons given for Ambiguous results. They are part of the messages users
// read, so they say what is wrong with the path.
const (
	reasonNamespace   = "path names the pipe namespace itself, which holds every pipe"
	reasonAncestor    = "path names a directory of the Windows object namespace that contains the pipe namespace"
	reasonServer      = `path names a UNC server, whose \pipe share holds its named pipes`
	reasonIPC         = "path names the IPC$ share, which carries named pipes"
	reasonUnknownDev  = "path mentions a pipe under a device name that cannot be resolved"
	reasonLoop        = "path follows too many object namespace links to resolve"
	reasonRedirector  = "path has a server name that may be a redirector prefix (;name) before a pipe share"
	reasonCleansToNT  = "path becomes an NT object path that reaches pipes once its `.` and `..` are resolved"
	reasonNTCollapse  = "path reads as an NT object path that reaches pipes if its leading separators are collapsed"
	reasonClimb       = "path has a `..` that climbs above the root of a pipe-like path"
	reasonRootDot     = "path has a `.` where Windows expects a device, server or share name"
	reasonEmptyName   = "path has an empty server or share name in a pipe-like UNC path"
	reasonDots        = "path has a segment made only of dots and spaces in a pipe-like path"
	reasonLeadingRun  = "path starts with three or more separators and could reach the pipe namespace"
	reasonRun         = "path has a run of three or more separators in the device or UNC namespace"
	reasonReserved    = `pipe name contains a character Windows reserves in names (< > : " | ? *)`
	reasonNUL         = "path contains a NUL byte"
	reasonControl     = "path contains a control character"
	reasonUTF8        = "path is not valid UTF-8 or contains U+FFFD"
	reasonInvisible   = "path contains invisible formatting characters"
	reasonEncoded     = "path contains percent-encoded or overlong-encoded characters"
	reasonLookalike   = "path contains a full-width or look-alike form of a separator, dot or letter"
	reasonSubPathPipe = "subPath is absolute or climbs out of the volume, and the volume or the subPath is pipe-like"
)

// Classify says whether raw, a hostPath or local volume path, refers to a
// Windows named pipe. It never fails: a path it cannot resolve confidently
// but that could reach a pipe is Ambiguous, which callers must treat as
// protected. The empty string is NotPipe.
func Classify(raw string) Result {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Result{Class: NotPipe}
	}
	if !plainASCII(s) {
		if f := scanFeatures(s); f != featNone {
			return classifyObfuscated(s, f)
		}
	}
	return classifyPath(s)
}

// plainASCII reports printable ASCII without '%': such a path has no
// encodings, control characters or look-alikes to look for.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '%' {
			return false
		}
	}
	return true
}
