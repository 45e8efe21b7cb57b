package audit

import (
	"bytes"
	"strings"
	"testing"
)

// scanCases are lines whose chain fields scanChain, which reads records
// too large to hold, must read as ParseRecord does: records as the writer
// writes them, and forgeries that play on JSON (escaped keys, keys in
// another case, duplicates, nesting, broken syntax).
var scanCases = []string{
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"7","pipeguard.io/prev-hash":"` + strings.Repeat("ab", 32) + `"}}`,
	`{"KIND":"Event","ApiVersion":"audit.k8s.io/v1","Annotations":{"pipeguard.io/seq":"7","pipeguard.io/prev-hash":"` + strings.Repeat("ab", 32) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io\/seq":"8","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"7","pipeguard.io/seq":"9","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","requestObject":{"a":[1,-2.5e3,true,false,null,{"b":"\u00e9\"\\"}]},"annotations":{"pipeguard.io/seq":"1","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","userAgent":"` + strings.Repeat("x", 2000) + `","annotations":{"pipeguard.io/seq":"3","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"0","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"1","pipeguard.io/prev-hash":"short"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v2","annotations":{"pipeguard.io/seq":"1","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":null}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":7}}`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"1","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}} trailing`,
	`{"kind":"Event","apiVersion":"audit.k8s.io/v1","annotations":{"pipeguard.io/seq":"1","pipeguard.io/prev-hash":"` + strings.Repeat("0", 64) + `"}`,
	`{"kind":"Event","userAgent":"a` + "\x01" + `b","apiVersion":"audit.k8s.io/v1"}`,
	`{"kind":"Event",,"apiVersion":"audit.k8s.io/v1"}`,
	`["kind","Event"]`,
	``,
	`   `,
	strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
}

func TestScanChainReadsAsParseRecord(t *testing.T) {
	for i, line := range scanCases {
		rec := ParseRecord("f", 1, []byte(line))
		seq, prev, err := scanChain(bytes.NewReader([]byte(line)))
		if (err == nil) != (rec.Err == nil) || err == nil && (seq != rec.Seq || prev != rec.Prev) {
			t.Errorf("case %d %.80q: scanChain seq %d prev %s err %v; ParseRecord seq %d prev %s err %v", i, line, seq, prev.Short(), err, rec.Seq, rec.Prev.Short(), rec.Err)
		}
	}
}

// FuzzScanChain checks that scanChain never accepts what ParseRecord
// rejects for its syntax or chain fields, nor reads other chain fields.
func FuzzScanChain(f *testing.F) {
	for _, c := range scanCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rec := ParseRecord("f", 1, []byte(line))
		seq, prev, err := scanChain(strings.NewReader(line))
		if err == nil && rec.Err == nil && (seq != rec.Seq || prev != rec.Prev) {
			t.Fatalf("%q: scanChain seq %d prev %s; ParseRecord seq %d prev %s", line, seq, prev.Short(), rec.Seq, rec.Prev.Short())
		}
		if err != nil && rec.Err == nil {
			t.Fatalf("%q: scanChain rejects (%v) a record ParseRecord reads", line, err)
		}
	})
}
