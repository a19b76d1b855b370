package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/jobsight/jobsight/internal/store"
)

// An item file is:
//
//	magic   "JSP1", or "JSP2" for a document with its version
//	kind    1 byte (store.DocKind)
//	version JSP2 only: uvarint, the document's external version (> 0)
//	target  uvarint length, bytes
//	index   uvarint length, bytes
//	id      uvarint length, bytes
//	body    uvarint length, bytes
//	crc     4 bytes, CRC-32C (Castagnoli) of everything before it, big endian
//
// A document keeps the version it was given when first written, so that a
// replay sends the same version (a version derived again from the clock
// could go backwards). Items without a version are still written as JSP1,
// so files of older agents and newer ones read alike.
// A file that does not parse exactly (short, long, wrong checksum) is corrupt.
const (
	magic          = "JSP1"
	magicVersioned = "JSP2"
)

// maxField bounds each length field, so a corrupt length cannot ask for
// more than a sane item holds.
const maxField = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt matches decoding errors of item files.
var ErrCorrupt = errors.New("corrupt spool item")

// encodeItem returns the file contents for it.
func encodeItem(it Item) []byte {
	n := len(magic) + 1 + 4*binary.MaxVarintLen64 + len(it.Target) + len(it.Index) + len(it.ID) + len(it.Body) + 4
	b := make([]byte, 0, n+binary.MaxVarintLen64)
	kind := byte(it.Kind) // #nosec G115 -- Enqueue passes only validKind kinds (0 to 2)
	if it.Version > 0 {
		b = append(b, magicVersioned...)
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(it.Version))
	} else {
		b = append(b, magic...)
		b = append(b, kind)
	}
	for _, f := range [][]byte{[]byte(it.Target), []byte(it.Index), []byte(it.ID), it.Body} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeItem parses the contents of an item file. Any error matches
// ErrCorrupt.
func decodeItem(b []byte) (Item, error) {
	var it Item
	if len(b) < len(magic)+1+4+4 {
		return it, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(b))
	}
	versioned := string(b[:len(magic)]) == magicVersioned
	if string(b[:len(magic)]) != magic && !versioned {
		return it, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:len(magic)])
	}
	payload, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(payload, castagnoli); got != sum {
		return it, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, sum)
	}
	it.Kind = store.DocKind(payload[len(magic)])
	if !validKind(it.Kind) {
		return it, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, it.Kind)
	}
	rest := payload[len(magic)+1:]
	if versioned {
		v, n := binary.Uvarint(rest)
		if n <= 0 || n != uvarintLen(v) || v == 0 || v > math.MaxInt64 {
			return it, fmt.Errorf("%w: bad version", ErrCorrupt)
		}
		it.Version, rest = int64(v), rest[n:]
	}
	var fields [4][]byte
	for i := range fields {
		l, n := binary.Uvarint(rest)
		if n <= 0 || n != uvarintLen(l) {
			return it, fmt.Errorf("%w: bad length of field %d", ErrCorrupt, i)
		}
		rest = rest[n:]
		if l > maxField || l > uint64(len(rest)) {
			return it, fmt.Errorf("%w: field %d length %d exceeds the %d bytes left", ErrCorrupt, i, l, len(rest))
		}
		fields[i], rest = rest[:l], rest[l:]
	}
	if len(rest) != 0 {
		return it, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(rest))
	}
	it.Target, it.Index, it.ID = string(fields[0]), string(fields[1]), string(fields[2])
	it.Body = append([]byte(nil), fields[3]...)
	return it, nil
}

func validKind(k store.DocKind) bool {
	return k == store.KindSamples || k == store.KindNodeDoc || k == store.KindJobDoc
}

// uvarintLen is the length of the canonical encoding of v; longer encodings
// of the same value are corrupt.
func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}
