package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/jobsight/jobsight/internal/store"
)

// An item file is:
//
//	magic   "JSP1"
//	kind    1 byte (store.DocKind)
//	target  uvarint length, bytes
//	index   uvarint length, bytes
//	id      uvarint length, bytes
//	body    uvarint length, bytes
//	crc     4 bytes, CRC-32C (Castagnoli) of everything before it, big endian
//
// A file that does not parse exactly (short, long, wrong checksum) is corrupt.
const magic = "JSP1"

// maxField bounds each length field, so a corrupt length cannot ask for
// more than a sane item holds.
const maxField = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt matches decoding errors of item files.
var ErrCorrupt = errors.New("corrupt spool item")

// encodeItem returns the file contents for it.
func encodeItem(it Item) []byte {
	n := len(magic) + 1 + 4*binary.MaxVarintLen64 + len(it.Target) + len(it.Index) + len(it.ID) + len(it.Body) + 4
	b := make([]byte, 0, n)
	b = append(b, magic...)
	b = append(b, byte(it.Kind))
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
	if string(b[:len(magic)]) != magic {
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
