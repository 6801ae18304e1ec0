package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// swapFeaturePayload converts a feature payload at p, n bytes long, of the
// features whose layout this test knows; it reports false for the others.
func (s *swapper) swapFeaturePayload(id Feature, p, n int64) bool {
	switch id {
	case FeatureHostname, FeatureOSRelease, FeatureVersion, FeatureArch, FeatureCPUDesc, FeatureCPUID:
		s.swapString(p)
	case FeatureNrCPUs:
		s.u32(p)
		s.u32(p + 4)
	case FeatureTotalMem, FeatureSampleTime, FeatureClockID:
		s.u64s(p, n/8)
	case FeatureCmdLine:
		nr := int64(le.Uint32(s.b[p:]))
		s.u32(p)
		p += 4
		for range nr {
			p = s.swapString(p)
		}
	case featureLast:
		// The empty end marker perf ≥ 6.5 sends (HEADER_LAST_FEATURE).
	default:
		return false
	}
	return true
}

// toBigEndianPipe returns the big-endian copy of a little-endian pipe
// stream, and the little-endian stream it corresponds to: the original
// without the HEADER_FEATURE records this converter cannot convert.
// HEADER_ATTR records (attr, then the ids) and HEADER_FEATURE records
// (feature id, then the payload as in a file's section) are converted
// here; everything else as in a file (swapRecord).
func toBigEndianPipe(t *testing.T, orig []byte) (big, little []byte) {
	little = bytes.Clone(orig[:pipeHeaderSize])
	for p := int64(pipeHeaderSize); p < int64(len(orig)); {
		size := int64(le.Uint16(orig[p+6:]))
		rec := orig[p : p+size]
		p += size
		if RecordType(le.Uint32(rec)) == RecordHeaderFeature {
			s := &swapper{b: bytes.Clone(rec)}
			if !s.swapFeaturePayload(Feature(le.Uint64(rec[8:])), 16, size-16) {
				continue
			}
		}
		little = append(little, rec...)
	}
	s := &swapper{t: t, b: bytes.Clone(little), ids: map[uint64]int{}, unused: map[RecordType]bool{}}
	copy(s.b, magicBE)
	s.u64(8)
	for p := int64(pipeHeaderSize); p < int64(len(s.b)); {
		size := int64(le.Uint16(s.b[p+6:]))
		switch RecordType(le.Uint32(s.b[p:])) {
		case RecordHeaderAttr:
			asize := int64(le.Uint32(s.b[p+8+4:]))
			a := decodeAttr(s.b[p+8:p+8+asize], le)
			var ids []uint64
			for q := p + 8 + asize; q < p+size; q += 8 {
				ids = append(ids, le.Uint64(s.b[q:]))
			}
			s.addAttr(a, ids)
			s.swapAttr(p+8, asize)
			s.u64s(p+8+asize, int64(len(ids)))
		case RecordHeaderFeature:
			id := Feature(le.Uint64(s.b[p+8:]))
			s.u64(p + 8)
			s.swapFeaturePayload(id, p+16, size-16)
		default:
			s.swapRecord(p)
			p += size
			continue
		}
		s.u32(p)
		s.u16(p + 4)
		s.u16(p + 6)
		p += size
	}
	for typ := range s.unused {
		t.Errorf("the converter does not know %v records; the test would compare them unconverted", typ)
	}
	return s.b, little
}

// TestBigEndianPipe: a big-endian pipe stream decodes to what its
// little-endian original decodes to. No big-endian machine is here: the
// stream is built from the real pipe.data (perf record -o -) in test code,
// every field rewritten at its width (toBigEndianPipe); the feature
// records it cannot convert are dropped from both.
func TestBigEndianPipe(t *testing.T) {
	t.Parallel()
	orig := readFixture(t, "pipe.data")
	big, little := toBigEndianPipe(t, orig)
	type dump struct {
		recs   []string
		events string
		feats  []string
		warn   []string
		order  binary.ByteOrder
	}
	read := func(b []byte) dump {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var d dump
		rs := r.Records(RecordsOptions{})
		for rs.Next() {
			rec := rs.Record()
			if hf, ok := rec.(*HeaderFeature); ok {
				// The payload is raw bytes in the stream's order:
				// compare the decoded features below instead.
				d.recs = append(d.recs, fmt.Sprintf("feature %d at %d", hf.FeatureID, hf.Offset))
				continue
			}
			d.recs = append(d.recs, fmt.Sprintf("%T %+v", rec, rec))
		}
		if rs.Err() != nil {
			t.Fatal(rs.Err())
		}
		d.order = r.ByteOrder()
		d.events = fmt.Sprintf("%+v", r.Events())
		fs := r.Features()
		for _, id := range fs.IDs() {
			d.feats = append(d.feats, id.String())
		}
		h, err := fs.Hostname()
		d.feats = append(d.feats, fmt.Sprint(h, err))
		v, err := fs.Version()
		d.feats = append(d.feats, fmt.Sprint(v, err))
		a, o, err := fs.NrCPUs()
		d.feats = append(d.feats, fmt.Sprint(a, o, err))
		m, err := fs.TotalMem()
		d.feats = append(d.feats, fmt.Sprint(m, err))
		c, err := fs.CmdLine()
		d.feats = append(d.feats, fmt.Sprint(c, err))
		d.warn = r.Warnings()
		return d
	}
	want, got := read(little), read(big)
	if got.order != binary.BigEndian {
		t.Fatal("not read as big-endian")
	}
	t.Logf("%d records; features compared: %q", len(want.recs), want.feats)
	if len(want.feats) < 5+4 || want.feats[5] == "" {
		t.Fatalf("too few features converted: %q", want.feats)
	}
	if got.events != want.events {
		t.Errorf("events differ:\n got %s\nwant %s", got.events, want.events)
	}
	if fmt.Sprint(got.feats) != fmt.Sprint(want.feats) {
		t.Errorf("features differ:\n got %q\nwant %q", got.feats, want.feats)
	}
	if len(got.warn) != 0 {
		t.Errorf("warnings: %q", got.warn)
	}
	if len(got.recs) != len(want.recs) || len(want.recs) < 200 {
		t.Fatalf("%d records, want %d", len(got.recs), len(want.recs))
	}
	for i := range want.recs {
		if got.recs[i] != want.recs[i] {
			t.Fatalf("record %d differs:\n got %s\nwant %s", i, got.recs[i], want.recs[i])
		}
	}
}
