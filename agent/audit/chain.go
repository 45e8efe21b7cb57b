package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Hash is a link of the chain.
type Hash [sha256.Size]byte

// Genesis returns the previous hash of the first record ever written: all
// zeros.
func Genesis() Hash { return Hash{} }

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short is the start of the hash, for messages.
func (h Hash) Short() string { return h.String()[:16] + "…" }

// ParseHash reads a hash in hex.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%q is not a SHA-256 hash in hex", s)
	}
	copy(h[:], b)
	return h, nil
}

// Link returns the hash of a record: SHA-256 over the previous hash and the
// record's raw line without its newline.
func Link(prev Hash, raw []byte) Hash {
	d := sha256.New()
	d.Write(prev[:])
	d.Write(raw)
	var h Hash
	d.Sum(h[:0])
	return h
}

// chainFields reads the sequence number and previous hash of a record.
func chainFields(e *Event) (uint64, Hash, error) {
	s, ok := e.Annotations[AnnotationSeq]
	if !ok {
		return 0, Hash{}, fmt.Errorf("it has no %s annotation", AnnotationSeq)
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 {
		return 0, Hash{}, fmt.Errorf("its %s %q is not a positive integer", AnnotationSeq, s)
	}
	prev, err := ParseHash(e.Annotations[AnnotationPrevHash])
	if err != nil {
		return 0, Hash{}, fmt.Errorf("its %s: %w", AnnotationPrevHash, err)
	}
	return seq, prev, nil
}
