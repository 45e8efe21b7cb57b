package audit

import (
	"strings"
	"testing"
	"time"
)

func TestParseAnchor(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	good := Anchor{Node: "n1", Head: Head{Seq: 42, Hash: Link(Genesis(), []byte("x")), File: "audit.log"}, Time: now, AgentStart: now}
	a, err := ParseAnchor("n1", "Lease x/y", good.Annotations())
	if err != nil || a.Seq != 42 || a.Hash != good.Hash || !a.Time.Equal(now) {
		t.Fatalf("round trip: %+v, %v", a, err)
	}
	cases := map[string]struct {
		key, value string
		want       string
	}{
		"another node's anchor": {AnchorNode, "n2", `Lease x/y: annotation audit.pipeguard.io/node is "n2", not node "n1": the anchor belongs to another node`},
		"seq zero":              {AnchorSeq, "0", `Lease x/y: annotation audit.pipeguard.io/seq "0" is not a positive integer`},
		"seq garbage":           {AnchorSeq, "-3", `annotation audit.pipeguard.io/seq "-3" is not a positive integer`},
		"short hash":            {AnchorHash, "abcd", `annotation audit.pipeguard.io/hash: "abcd" is not a SHA-256 hash in hex`},
		"bad time":              {AnchorTime, "yesterday", `annotation audit.pipeguard.io/time "yesterday" is not an RFC 3339 time`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ann := good.Annotations()
			ann[tc.key] = tc.value
			_, err := ParseAnchor("n1", "Lease x/y", ann)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
