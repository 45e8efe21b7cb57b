// Package pipepath decides whether a hostPath or local volume path refers
// to a Windows named pipe, and which one.
//
// A pod that mounts a privileged pipe such as CSI Proxy's
// `\\.\pipe\csi-proxy-disk-v1` can format disks and start services on the
// node, so admission must recognise every spelling a Windows node accepts
// for that pipe: any letter case, `/` for `\`, doubled separators, the
// `\\?\`, `\??\`, `\\localhost\pipe\`, `\Device\NamedPipe\` and
// `\\.\GLOBALROOT\...` forms, `.` and `..` segments, trailing dots and
// spaces. Beyond what Windows does, it also folds look-alike letters whose
// Unicode case-fold orbit holds an ASCII letter (ſ, ı, İ, the Kelvin sign):
// Windows treats them as other names, pipeguard as the protected one, which
// errs the safe way. An attacker picks
// the spelling, so the package errs one way only: a path that could reach
// a pipe but cannot be resolved confidently (the pipe namespace itself, a
// NUL, control or invisible character (package internal/invisible holds
// the list: format characters, line and paragraph separators, blank
// letters such as U+3164), percent-encoded or full-width separators, a
// `..` that climbs past a root, an unknown device name that mentions a
// pipe) is Ambiguous, and callers treat Ambiguous as protected. It never
// answers NotPipe for a path it is unsure about.
//
// Paths on a drive (`C:\pipe\x`), rooted paths (`\pipe\x`) and relative
// paths are file system paths, never pipes: Windows resolves them on a
// volume. What a directory on the host links to is out of reach of
// admission and out of scope here.
//
// Classify sits on the admission hot path: for a typical path it allocates
// only the strings it returns.
package pipepath
