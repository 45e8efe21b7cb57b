package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEncodeLineIsOneASCIILine(t *testing.T) {
	req := workerRequest{ID: 7, Run: "s3", Env: map[string]string{"v": "héllo\n\"wörld\" ✓ 𝄞 \u2028 </script>"}}
	line, err := encodeLine(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(line), "\n") != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("%q is not one line", line)
	}
	for _, c := range line {
		if c >= 0x80 {
			t.Fatalf("%q holds a non-ASCII byte", line)
		}
	}
	var back workerRequest
	if err := json.Unmarshal(line, &back); err != nil || back.Env["v"] != req.Env["v"] {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestReadLineBounds(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string
		err  error
	}{
		"lines":             {"a\nbb\r\n", []string{"a", "bb"}, io.EOF},
		"exactly the bound": {strings.Repeat("x", 8) + "\r\n", []string{strings.Repeat("x", 8)}, io.EOF},
		"over the bound":    {strings.Repeat("x", 9) + "\n", nil, errLineTooLong},
		"far over":          {strings.Repeat("x", 1<<20), nil, errLineTooLong},
		"cut mid-line":      {"a\n{\"id\":1", []string{"a"}, io.ErrUnexpectedEOF},
		"empty":             {"", nil, io.EOF},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			var got []string
			for {
				line, err := readLine(r, 8)
				if err != nil {
					if !errors.Is(err, tc.err) {
						t.Fatalf("err = %v, want %v", err, tc.err)
					}
					break
				}
				got = append(got, string(line))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeAnswer(t *testing.T) {
	cases := map[string]struct {
		line, err string
	}{
		"answer":         {`{"id":3,"ok":true,"out":"x"}`, ""},
		"error answer":   {`{"id":3,"ok":false,"error":"boom"}`, ""},
		"not JSON":       {`WARNING: x`, "it is not JSON: invalid character 'W' looking for beginning of value"},
		"no id":          {`{"ok":true}`, `it has no "id" or no "ok"`},
		"no ok":          {`{"id":3}`, `it has no "id" or no "ok"`},
		"other id":       {`{"id":4,"ok":true}`, "it answers request 4, not 3"},
		"two values":     {`{"id":3,"ok":true} {"id":3,"ok":true}`, "it holds more than one JSON value"},
		"wrong types":    {`{"id":"3","ok":true}`, "it is not JSON: json: cannot unmarshal string into Go struct field workerAnswer.id of type uint64"},
		"array":          {`[1]`, "it is not JSON: json: cannot unmarshal array into Go value of type runner.workerAnswer"},
		"negative id":    {`{"id":-3,"ok":true}`, "it is not JSON: json: cannot unmarshal number -3 into Go struct field workerAnswer.id of type uint64"},
		"truncated JSON": {`{"id":3,"ok":tr`, "it is not JSON: unexpected EOF"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeAnswer([]byte(tc.line), 3)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	tb := &tailBuffer{max: 32}
	for i := range 20 {
		_, _ = tb.Write([]byte(strings.Repeat("x", i) + "\n"))
	}
	_, _ = tb.Write([]byte("last words\n"))
	// The last 32 bytes: the end of the 19-x line, and the last words.
	if got, want := tb.lastLines(10), "... "+strings.Repeat("x", 19)+" | last words"; got != want {
		t.Fatalf("lastLines(10) = %q, want %q", got, want)
	}
	if got := tb.lastLines(1); got != "... last words" {
		t.Fatalf("lastLines(1) = %q", got)
	}
	if n := len(tb.buf); n > 32 {
		t.Fatalf("kept %d bytes, over the bound", n)
	}
	if got := (&tailBuffer{max: 32}).lastLines(3); got != "" {
		t.Fatalf("empty tail = %q", got)
	}
}
