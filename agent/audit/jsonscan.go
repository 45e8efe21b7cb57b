package audit

// A streaming reader of a record's chain fields, for records too large to
// hold in memory: it checks the JSON syntax of one line and finds kind,
// apiVersion and the chain annotations while skipping the contents of
// every other string, so its memory does not grow with the record.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxScanDepth bounds the nesting the scan follows, as encoding/json does.
const maxScanDepth = 10000

// maxScanCapture bounds the strings the scan keeps: keys, and the values
// it reads (kind, apiVersion, seq, prev-hash); longer ones match nothing.
const maxScanCapture = 256

type jsonScan struct {
	r     *bufio.Reader
	depth int
	// what it found; last wins, as encoding/json decodes duplicates.
	kind, apiVersion string
	seq, prev        string
	hasSeq           bool
}

// scanChain reads one JSON line from r and returns its chain fields, or
// why it is not an audit record, as ParseRecord would tell.
func scanChain(r io.Reader) (uint64, Hash, error) {
	s := &jsonScan{r: bufio.NewReaderSize(r, 4096)}
	c, err := s.skipSpace()
	if err != nil {
		return 0, Hash{}, errors.New("empty line")
	}
	if c != '{' {
		return 0, Hash{}, fmt.Errorf("not a JSON audit record (it starts with %q, not an object)", c)
	}
	if err := s.object(0, s.topField); err != nil {
		return 0, Hash{}, fmt.Errorf("not a JSON audit record (%w)", err)
	}
	if c, err := s.skipSpace(); err == nil {
		return 0, Hash{}, fmt.Errorf("not a JSON audit record (%q after the object)", c)
	}
	if s.kind != Kind || s.apiVersion != APIVersion {
		return 0, Hash{}, fmt.Errorf("not an %s %s (kind %q, apiVersion %q)", APIVersion, Kind, s.kind, s.apiVersion)
	}
	e := Event{Annotations: map[string]string{AnnotationPrevHash: s.prev}}
	if s.hasSeq {
		e.Annotations[AnnotationSeq] = s.seq
	}
	return chainFields(&e)
}

func (s *jsonScan) skipSpace() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func (s *jsonScan) need() (byte, error) {
	c, err := s.skipSpace()
	if err == io.EOF {
		return 0, errors.New("unexpected end of JSON input")
	}
	return c, err
}

// topField reads a field of the record object. Field names match
// case-insensitively, as encoding/json matches them.
func (s *jsonScan) topField(key string, c byte) error {
	switch {
	case strings.EqualFold(key, "kind"), strings.EqualFold(key, "apiVersion"):
		v, err := s.stringValue(c, key)
		if err != nil {
			return err
		}
		if strings.EqualFold(key, "kind") {
			s.kind = v
		} else {
			s.apiVersion = v
		}
		return nil
	case strings.EqualFold(key, "annotations") && c == '{':
		return s.object(1, s.annotation)
	case strings.EqualFold(key, "annotations") && c != 'n':
		return errors.New("annotations is not an object")
	}
	return s.value(c, 1)
}

// annotation reads one annotation; values are strings.
func (s *jsonScan) annotation(key string, c byte) error {
	if key != AnnotationSeq && key != AnnotationPrevHash {
		if c != '"' {
			return fmt.Errorf("annotation %q is not a string", key)
		}
		_, err := s.str(false)
		return err
	}
	v, err := s.stringValue(c, key)
	if err != nil {
		return err
	}
	if key == AnnotationSeq {
		s.seq, s.hasSeq = v, true
	} else {
		s.prev = v
	}
	return nil
}

func (s *jsonScan) stringValue(c byte, key string) (string, error) {
	if c != '"' {
		return "", fmt.Errorf("%s is not a string", key)
	}
	return s.str(true)
}

// object reads an object whose '{' was read, calling field with each key
// and the first byte of its value, which field must read.
func (s *jsonScan) object(depth int, field func(key string, c byte) error) error {
	if depth >= maxScanDepth {
		return errors.New("nested too deeply")
	}
	c, err := s.need()
	if err != nil {
		return err
	}
	if c == '}' {
		return nil
	}
	for {
		if c != '"' {
			return fmt.Errorf("invalid character %q looking for an object key", c)
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if c, err = s.need(); err != nil {
			return err
		}
		if c != ':' {
			return fmt.Errorf("invalid character %q after an object key", c)
		}
		if c, err = s.need(); err != nil {
			return err
		}
		if err := field(key, c); err != nil {
			return err
		}
		if c, err = s.need(); err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = s.need(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("invalid character %q after an object value", c)
		}
	}
}

// value skips a value whose first byte is c.
func (s *jsonScan) value(c byte, depth int) error {
	switch {
	case c == '{':
		return s.object(depth+1, func(_ string, c byte) error { return s.value(c, depth+1) })
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == 't':
		return s.literal("rue")
	case c == 'f':
		return s.literal("alse")
	case c == 'n':
		return s.literal("ull")
	case c == '-' || (c >= '0' && c <= '9'):
		for {
			c, err := s.r.ReadByte()
			if err != nil {
				return nil
			}
			if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
				return s.r.UnreadByte()
			}
		}
	}
	return fmt.Errorf("invalid character %q looking for a value", c)
}

func (s *jsonScan) array(depth int) error {
	if depth >= maxScanDepth {
		return errors.New("nested too deeply")
	}
	c, err := s.need()
	if err != nil {
		return err
	}
	if c == ']' {
		return nil
	}
	for {
		if err := s.value(c, depth); err != nil {
			return err
		}
		if c, err = s.need(); err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
			if c, err = s.need(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("invalid character %q after an array element", c)
		}
	}
}

func (s *jsonScan) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		if c, err := s.r.ReadByte(); err != nil || c != rest[i] {
			return errors.New("invalid literal")
		}
	}
	return nil
}

// str reads a string whose '"' was read. With keep, it returns the string
// decoded when its encoding is at most maxScanCapture bytes, and "\x00"
// (which matches no key or value the scan looks for) when longer.
func (s *jsonScan) str(keep bool) (string, error) {
	var buf [maxScanCapture + 2]byte
	raw := append(buf[:0], '"')
	long := false
	add := func(c byte) {
		if keep && !long {
			if len(raw) < maxScanCapture+1 {
				raw = append(raw, c)
			} else {
				long = true
			}
		}
	}
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return "", errors.New("unexpected end of JSON input in a string")
		}
		switch {
		case c == '"':
			if !keep {
				return "", nil
			}
			if long {
				return "\x00", nil
			}
			var v string
			if err := json.Unmarshal(append(raw, '"'), &v); err != nil {
				return "", err
			}
			return v, nil
		case c < 0x20:
			return "", fmt.Errorf("invalid character %q in a string", c)
		case c == '\\':
			add(c)
			e, err := s.r.ReadByte()
			if err != nil {
				return "", errors.New("unexpected end of JSON input in a string")
			}
			add(e)
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for i := 0; i < 4; i++ {
					h, err := s.r.ReadByte()
					if err != nil || !isHex(h) {
						return "", errors.New("invalid \\u escape in a string")
					}
					add(h)
				}
			default:
				return "", fmt.Errorf("invalid escape \\%c in a string", e)
			}
		default:
			add(c)
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
