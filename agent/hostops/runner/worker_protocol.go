package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// DefaultWorkerMaxLine bounds one line a PowerShell worker writes: a longer
// answer fails its request and the worker is replaced.
const DefaultWorkerMaxLine = 16 << 20

// workerRegister teaches a worker process a script under a name.
type workerRegister struct {
	Register string `json:"register"`
	Script   string `json:"script"`
}

// workerRequest runs a registered script with its values.
type workerRequest struct {
	ID  uint64            `json:"id"`
	Run string            `json:"run"`
	Env map[string]string `json:"env"`
}

// workerAnswer is the one line a worker writes for a request.
type workerAnswer struct {
	ID    *uint64 `json:"id"`
	OK    *bool   `json:"ok"`
	Out   string  `json:"out"`
	Error string  `json:"error"`
}

// ScriptError is the failure a PowerShell worker reported for a script: the
// message of the exception that ended it.
type ScriptError struct {
	Message string
}

func (e *ScriptError) Error() string {
	if e.Message == "" {
		return "the script failed with no message"
	}
	return e.Message
}

// errLineTooLong is a worker line over the bound.
var errLineTooLong = errors.New("line too long")

// encodeLine marshals v as one JSON line of ASCII only: every character
// outside ASCII is written as a \u escape, so that the line means the same
// whatever encoding the reader assumes.
func encodeLine(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + 1)
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		data = data[size:]
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// requestEnv turns Command.Env entries into the values of a request. Names
// must be PowerShell variable names ($Env:name) and values must hold no NUL,
// which no environment can carry: an entry that breaks either is refused
// rather than altered.
func requestEnv(entries []string) (map[string]string, error) {
	env := make(map[string]string, len(entries))
	for _, e := range entries {
		name, value, ok := strings.Cut(e, "=")
		if !ok || !validEnvName(name) {
			return nil, fmt.Errorf("environment entry %q does not start with a variable name and '=' (letters, digits and _, not starting with a digit)", truncate(e, 40))
		}
		if strings.IndexByte(value, 0) >= 0 {
			return nil, fmt.Errorf("the value of %s holds a NUL character, which no environment variable can carry", name)
		}
		env[name] = value
	}
	return env, nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// readLine reads one line of at most max bytes (its newline and a
// carriage return before it not included). A longer line is errLineTooLong;
// the reader is then mid-line and must not be used again.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 { // room for "\r\n"
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			if len(line) > max {
				return nil, errLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// decodeAnswer parses the answer to request id from line.
func decodeAnswer(line []byte, id uint64) (workerAnswer, error) {
	var a workerAnswer
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("it is not JSON: %w", err)
	}
	if dec.More() {
		return a, errors.New("it holds more than one JSON value")
	}
	if a.ID == nil || a.OK == nil {
		return a, errors.New(`it has no "id" or no "ok"`)
	}
	if *a.ID != id {
		return a, fmt.Errorf("it answers request %d, not %d", *a.ID, id)
	}
	return a, nil
}

// truncate shortens s to about n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
