package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/jobsight/jobsight/internal/store"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := Item{Kind: store.KindNodeDoc, Target: "es", Index: "nodes", ID: "c1:7:n1", Body: []byte(`{"x":1}`)}
	out, err := decodeItem(encodeItem(in))
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != in.Kind || out.Target != in.Target || out.Index != in.Index || out.ID != in.ID || !bytes.Equal(out.Body, in.Body) {
		t.Errorf("round trip gave %+v, want %+v", out, in)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	good := encodeItem(Item{Kind: store.KindJobDoc, Target: "es", Index: "jobs", ID: "c1:1", Body: []byte("{}")})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"appended":  append(append([]byte(nil), good...), 0),
		"bad magic": append([]byte("XXXX"), good[4:]...),
		"bit flip":  func() []byte { b := bytes.Clone(good); b[6] ^= 1; return b }(),
	} {
		if _, err := decodeItem(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v; want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeItem(f *testing.F) {
	f.Add(encodeItem(Item{Kind: store.KindJobDoc, Target: "es", Index: "jobs", ID: "c1:1", Body: []byte(`{"a":1}`)}))
	f.Add(encodeItem(Item{Kind: store.KindSamples, Target: "prom", Body: []byte{0, 1, 2}}))
	f.Add([]byte("JSP1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := decodeItem(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes must encode to the same bytes.
		if again := encodeItem(it); !bytes.Equal(again, b) {
			t.Fatalf("decoded %+v re-encodes to %x, input was %x", it, again, b)
		}
	})
}

func TestDecodeRejectsNonCanonicalLength(t *testing.T) {
	// A target length of 0 written as two bytes (0x80 0x00), with a valid
	// checksum: decodes to the same item but is not what encodeItem writes.
	b := []byte(magic)
	b = append(b, byte(store.KindSamples), 0x80, 0x00, 0, 0, 1, 'x')
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if _, err := decodeItem(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("non-canonical length: %v; want ErrCorrupt", err)
	}
}

// A document's version survives the file (JSP2), and files without one
// stay JSP1, as older agents wrote them.
func TestVersionRoundTrip(t *testing.T) {
	in := Item{Kind: store.KindJobDoc, Target: "es", Index: "jobs", ID: "c1:1", Body: []byte("{}"), Version: 1_700_000_000_123_456}
	b := encodeItem(in)
	if string(b[:4]) != magicVersioned {
		t.Errorf("magic %q, want %q", b[:4], magicVersioned)
	}
	out, err := decodeItem(b)
	if err != nil || out.Version != in.Version {
		t.Errorf("version %d (%v), want %d", out.Version, err, in.Version)
	}
	in.Version = 0
	if b := encodeItem(in); string(b[:4]) != magic {
		t.Errorf("an item without a version: magic %q, want %q", b[:4], magic)
	}
}
