package wmitest

import (
	"fmt"
	"strconv"
	"strings"
)

// The tokens of the WQL the provider parses: strictly, so that a value
// spliced into a query without wmi.Quote fails it or reads as other words.

type tokKind int

const (
	tokWord tokKind = iota
	tokValue
	tokEq
	tokComma
	tokStar
)

type token struct {
	kind  tokKind
	text  string
	value any // for tokValue: string, uint64 or bool
}

func (t token) is(word string) bool { return t.kind == tokWord && strings.EqualFold(t.text, word) }

func lex(q string) ([]token, error) {
	var toks []token
	for i := 0; i < len(q); {
		ch := q[i]
		switch {
		case ch == ' ' || ch == '\t':
			i++
		case ch == '=':
			toks = append(toks, token{kind: tokEq, text: "="})
			i++
		case ch == ',':
			toks = append(toks, token{kind: tokComma, text: ","})
			i++
		case ch == '*':
			toks = append(toks, token{kind: tokStar, text: "*"})
			i++
		case ch == '\'' || ch == '"':
			s, n, err := lexString(q[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokValue, text: q[i : i+n], value: s})
			i += n
		case ch >= '0' && ch <= '9':
			j := i
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, err := strconv.ParseUint(q[i:j], 10, 64)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokValue, text: q[i:j], value: n})
			i = j
		case ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z':
			j := i
			for j < len(q) && (q[j] == '_' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			w := q[i:j]
			switch strings.ToUpper(w) {
			case "TRUE":
				toks = append(toks, token{kind: tokValue, text: w, value: true})
			case "FALSE":
				toks = append(toks, token{kind: tokValue, text: w, value: false})
			default:
				toks = append(toks, token{kind: tokWord, text: w})
			}
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d", ch, i)
		}
	}
	return toks, nil
}

// lexString reads a quoted WQL string at the start of s: its value and
// its length. A backslash escapes only a backslash or a quote.
func lexString(s string) (string, int, error) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != '\'' && s[i+1] != '"') {
				return "", 0, fmt.Errorf("bad escape at %d", i)
			}
			i++
			b.WriteByte(s[i])
		case quote:
			return b.String(), i + 1, nil
		default:
			if s[i] < 0x20 {
				return "", 0, fmt.Errorf("control character at %d", i)
			}
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}
