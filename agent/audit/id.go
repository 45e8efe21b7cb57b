package audit

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// IDs hands out audit IDs: 128-bit values written as UUIDs (8-4-4-4-12
// lowercase hex), in the RFC 9562 version 8 ("custom") layout, bits
// counted from the most significant:
//
//	bits   0–47   random, drawn once per IDs (per agent start)
//	bits  48–51   version, 8
//	bits  52–63   random, drawn once
//	bits  64–65   variant, binary 10
//	bits  66–127  a random offset, drawn once, plus a counter, modulo 2^62
//
// Within one IDs, every ID differs from every other until 2^62 have been
// handed out. Two IDs (two agent starts, or two agents) share no ID unless
// their 122 random bits happen to put the same 60-bit prefix and
// overlapping counter ranges together, which is as unlikely as a random
// (version 4) UUID colliding. Only the random bits are drawn from
// crypto/rand, once; an ID costs an atomic increment and a formatting.
// Audit IDs are unique, not secret: the IDs of one agent start follow each
// other, as the records' sequence numbers do.
//
// IDs is safe for concurrent use.
type IDs struct {
	hi  uint64 // bits 0–63, version set
	lo  uint64 // the random offset of bits 66–127 (62 bits)
	ctr atomic.Uint64
}

// NewIDs draws the random parts of a new ID source from crypto/rand.
func NewIDs() (*IDs, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("reading random bits for audit IDs from the system: %w", err)
	}
	return newIDs(b), nil
}

// newIDs builds an ID source from 16 random bytes.
func newIDs(b [16]byte) *IDs {
	hi := binary.BigEndian.Uint64(b[:8])
	hi = hi&^(0xf<<12) | 0x8<<12 // version 8
	return &IDs{hi: hi, lo: binary.BigEndian.Uint64(b[8:]) & loMask}
}

const (
	loMask  = 1<<62 - 1
	variant = 0b10 << 62
)

// New returns the next ID.
func (s *IDs) New() string {
	lo := (s.lo+s.ctr.Add(1))&loMask | variant
	var b [36]byte
	hex64(b[0:8], s.hi>>32)
	b[8] = '-'
	hex64(b[9:13], s.hi>>16)
	b[13] = '-'
	hex64(b[14:18], s.hi)
	b[18] = '-'
	hex64(b[19:23], lo>>48)
	b[23] = '-'
	hex64(b[24:36], lo)
	return string(b[:])
}

// hex64 writes the low 4·len(dst) bits of v as lowercase hex into dst.
func hex64(dst []byte, v uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = hexDigits[v&0xf]
		v >>= 4
	}
}
