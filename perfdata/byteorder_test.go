package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"testing"
)

// There is no big-endian machine here to record a big-endian perf.data, so
// this file builds one from a real little-endian recording: every field is
// rewritten at its natural width in big-endian order, the attr flags and
// branch-entry bitfields are laid out as a big-endian C compiler allocates
// them (from the most significant bit down), opaque bytes (strings,
// build-ids, user stack copies) stay as they are. The copy must decode to
// exactly what the original decodes to.

var (
	le = binary.LittleEndian
	be = binary.BigEndian
)

// swapper converts one little-endian recording to big-endian in place.
type swapper struct {
	t      *testing.T
	b      []byte
	attrs  []Attr
	ids    map[uint64]int
	idAll  bool
	idPos  int
	isPos  int
	unused map[RecordType]bool
}

func (s *swapper) u16(off int64) { be.PutUint16(s.b[off:], le.Uint16(s.b[off:])) }
func (s *swapper) u32(off int64) { be.PutUint32(s.b[off:], le.Uint32(s.b[off:])) }
func (s *swapper) u64(off int64) { be.PutUint64(s.b[off:], le.Uint64(s.b[off:])) }
func (s *swapper) u64s(off int64, n int64) {
	for i := int64(0); i < n; i++ {
		s.u64(off + 8*i)
	}
}

// attrFlagsBE lays the little-endian flags word out as a big-endian C
// bitfield: single-bit flag i at bit 63-i, the two-bit precise_ip value at
// bits 47..48 (value = word>>47 & 3).
func attrFlagsBE(v uint64) uint64 {
	precise := v >> 15 & 3
	single := v &^ (3 << 15)
	return bits.Reverse64(single) | precise<<47
}

// branchFlagsToBE is the inverse of the layout evsel__bitfield_swap_branch_flags
// reads: the perf_branch_entry bitfield allocated from the top bit down.
func branchFlagsToBE(v uint64) uint64 {
	var o uint64
	o |= (v & 1) << 63
	o |= (v >> 1 & 1) << 62
	o |= (v >> 2 & 1) << 61
	o |= (v >> 3 & 1) << 60
	o |= (v >> 4 & 0xffff) << 44
	o |= (v >> 20 & 0xf) << 40
	o |= (v >> 24 & 3) << 38
	o |= (v >> 26 & 0xf) << 34
	o |= (v >> 30 & 7) << 31
	return o
}

// swapAttr converts the perf_event_attr at off, of size n.
func (s *swapper) swapAttr(off int64, n int64) {
	a := decodeAttr(s.b[off:off+n], le)
	type field struct {
		at, width int64
	}
	for _, f := range []field{{0, 4}, {4, 4}, {8, 8}, {16, 8}, {24, 8}, {32, 8}, {48, 4}, {52, 4}, {56, 8}, {64, 8},
		{72, 8}, {80, 8}, {88, 4}, {92, 4}, {96, 8}, {104, 4}, {108, 2}, {110, 2}, {112, 4}, {116, 4}, {120, 8}, {128, 8}, {136, 8}} {
		if f.at+f.width > n {
			continue
		}
		switch f.width {
		case 2:
			s.u16(off + f.at)
		case 4:
			s.u32(off + f.at)
		case 8:
			s.u64(off + f.at)
		}
	}
	be.PutUint64(s.b[off+40:], attrFlagsBE(uint64(a.Flags)))
}

func (s *swapper) addAttr(a Attr, ids []uint64) {
	idx := len(s.attrs)
	s.attrs = append(s.attrs, a)
	for _, id := range ids {
		if _, ok := s.ids[id]; !ok {
			s.ids[id] = idx
		}
	}
	if idx == 0 {
		s.idAll = a.SampleIDAll()
		s.idPos = idPos(a.SampleType)
		s.isPos = isPos(a.SampleType)
	}
}

// attrOf finds a little-endian record's attr as the reader does.
func (s *swapper) attrOf(typ RecordType, rec []byte) *Attr {
	es := eventSet{ids: s.ids, sampleIDAll: s.idAll, idPos: s.idPos, isPos: s.isPos}
	for _, a := range s.attrs {
		es.events = append(es.events, Event{Attr: a})
	}
	i := es.lookup(typ, rec, le)
	return &s.attrs[i]
}

// swapSampleID converts a sample_id trailer at off.
func (s *swapper) swapSampleID(off int64, st SampleType) {
	if st&SampleTID != 0 {
		s.u32(off)
		s.u32(off + 4)
		off += 8
	}
	for _, b := range []SampleType{SampleTime, SampleID, SampleStreamID} {
		if st&b != 0 {
			s.u64(off)
			off += 8
		}
	}
	if st&SampleCPU != 0 {
		s.u32(off)
		s.u32(off + 4)
		off += 8
	}
	if st&SampleIdentifier != 0 {
		s.u64(off)
	}
}

func (s *swapper) swapRead(off int64, rf ReadFormat) int64 {
	if rf&FormatGroup != 0 {
		nr := int64(le.Uint64(s.b[off:]))
		n := int64(1)
		if rf&FormatTotalTimeEnabled != 0 {
			n++
		}
		if rf&FormatTotalTimeRunning != 0 {
			n++
		}
		per := int64(1)
		if rf&FormatID != 0 {
			per++
		}
		if rf&FormatLost != 0 {
			per++
		}
		n += nr * per
		s.u64s(off, n)
		return off + 8*n
	}
	n := int64(1 + bits.OnesCount64(uint64(rf&(FormatTotalTimeEnabled|FormatTotalTimeRunning|FormatID|FormatLost))))
	s.u64s(off, n)
	return off + 8*n
}

func (s *swapper) swapSample(off int64, a *Attr) {
	st := a.SampleType
	p := off + 8
	for _, b := range []SampleType{SampleIdentifier, SampleIP} {
		if st&b != 0 {
			s.u64(p)
			p += 8
		}
	}
	if st&SampleTID != 0 {
		s.u32(p)
		s.u32(p + 4)
		p += 8
	}
	for _, b := range []SampleType{SampleTime, SampleAddr, SampleID, SampleStreamID} {
		if st&b != 0 {
			s.u64(p)
			p += 8
		}
	}
	if st&SampleCPU != 0 {
		s.u32(p)
		s.u32(p + 4)
		p += 8
	}
	if st&SamplePeriod != 0 {
		s.u64(p)
		p += 8
	}
	if st&SampleRead != 0 {
		p = s.swapRead(p, a.ReadFormat)
	}
	if st&SampleCallchain != 0 {
		nr := int64(le.Uint64(s.b[p:]))
		s.u64s(p, 1+nr)
		p += 8 * (1 + nr)
	}
	if st&SampleRaw != 0 {
		n := int64(le.Uint32(s.b[p:]))
		s.u32(p)
		p += 4 + n
	}
	if st&SampleBranchStack != 0 {
		nr := int64(le.Uint64(s.b[p:]))
		s.u64(p)
		p += 8
		if a.BranchSampleType&BranchHWIndex != 0 {
			s.u64(p)
			p += 8
		}
		for i := int64(0); i < nr; i++ {
			s.u64(p)
			s.u64(p + 8)
			be.PutUint64(s.b[p+16:], branchFlagsToBE(le.Uint64(s.b[p+16:])))
			p += 24
		}
		if a.BranchSampleType&BranchCounters != 0 {
			s.u64s(p, nr)
			p += 8 * nr
		}
	}
	regs := func(mask uint64) {
		abi := le.Uint64(s.b[p:])
		s.u64(p)
		p += 8
		if abi != 0 {
			n := int64(bits.OnesCount64(mask))
			s.u64s(p, n)
			p += 8 * n
		}
	}
	if st&SampleRegsUser != 0 {
		regs(a.SampleRegsUser)
	}
	if st&SampleStackUser != 0 {
		n := int64(le.Uint64(s.b[p:]))
		s.u64(p)
		p += 8
		if n != 0 {
			p += n
			s.u64(p)
			p += 8
		}
	}
	for _, b := range []SampleType{SampleWeight | SampleWeightStruct, SampleDataSrc, SampleTransaction} {
		if st&b != 0 {
			s.u64(p)
			p += 8
		}
	}
	if st&SampleRegsIntr != 0 {
		regs(a.SampleRegsIntr)
	}
	for _, b := range []SampleType{SamplePhysAddr, SampleCgroup, SampleDataPageSize, SampleCodePageSize} {
		if st&b != 0 {
			s.u64(p)
			p += 8
		}
	}
	if st&SampleAux != 0 {
		s.u64(p)
	}
}

// swapCPUMapData converts a packed cpu_map_data at p.
func (s *swapper) swapCPUMapData(p int64) {
	typ := le.Uint16(s.b[p:])
	s.u16(p)
	switch typ {
	case 0:
		nr := int64(le.Uint16(s.b[p+2:]))
		for i := int64(0); i <= nr; i++ {
			s.u16(p + 2 + 2*i)
		}
	case 1:
		nr := int64(le.Uint16(s.b[p+2:]))
		ls := le.Uint16(s.b[p+4:])
		s.u16(p + 2)
		s.u16(p + 4)
		if ls == 4 {
			for i := int64(0); i < nr; i++ {
				s.u32(p + 6 + 4*i)
			}
		} else {
			s.u64s(p+8, nr)
		}
	case 2:
		s.u16(p + 4)
		s.u16(p + 6)
	}
}

// swapRecord converts the record at off and returns its size.
func (s *swapper) swapRecord(off int64) int64 {
	typ := RecordType(le.Uint32(s.b[off:]))
	size := int64(le.Uint16(s.b[off+6:]))
	misc := le.Uint16(s.b[off+4:])
	rec := s.b[off : off+size]
	p := off + 8
	if typ < recordUserStart {
		a := s.attrOf(typ, rec)
		end := off + size
		if typ != RecordSample && a.SampleIDAll() {
			n := int64(idHeaderSize(a.SampleType))
			end -= n
			s.swapSampleID(end, a.SampleType)
		}
		switch typ {
		case RecordSample:
			s.swapSample(off, a)
		case RecordMmap:
			s.u32(p)
			s.u32(p + 4)
			s.u64s(p+8, 3)
		case RecordMmap2:
			s.u32(p)
			s.u32(p + 4)
			s.u64s(p+8, 3)
			if misc&miscMmapBuildID == 0 {
				s.u32(p + 32)
				s.u32(p + 36)
				s.u64s(p+40, 2)
			}
			s.u32(p + 56)
			s.u32(p + 60)
		case RecordComm:
			s.u32(p)
			s.u32(p + 4)
		case RecordExit, RecordFork:
			for i := int64(0); i < 4; i++ {
				s.u32(p + 4*i)
			}
			s.u64(p + 16)
		case RecordLost, RecordThrottle, RecordUnthrottle, RecordLostSamples:
			s.u64s(p, (end-p)/8)
		default:
			s.unused[typ] = true
		}
	} else {
		switch typ {
		case RecordFinishedRound, RecordFinishedInit:
		case RecordIDIndex, RecordStatConfig:
			s.u64s(p, (size-8)/8)
		case RecordThreadMap:
			nr := int64(le.Uint64(s.b[p:]))
			s.u64(p)
			for i := int64(0); i < nr; i++ {
				s.u64(p + 8 + 24*i)
			}
		case RecordCPUMap:
			s.swapCPUMapData(p)
		case RecordEventUpdate:
			ut := le.Uint64(s.b[p:])
			s.u64s(p, 2)
			switch ut {
			case EventUpdateScale:
				s.u64(p + 16)
			case EventUpdateCPUs:
				s.swapCPUMapData(p + 16)
			}
		case RecordTimeConv:
			s.u64s(p, min(5, (size-8)/8))
		default:
			s.unused[typ] = true
		}
	}
	s.u32(off)
	s.u16(off + 4)
	s.u16(off + 6)
	return size
}

// swapString converts a perf_header_string at p and returns its end.
func (s *swapper) swapString(p int64) int64 {
	n := int64(le.Uint32(s.b[p:]))
	s.u32(p)
	return p + 4 + n
}

// toBigEndian returns the big-endian copy of a little-endian file-format
// recording. Features it does not convert are dropped from the bitmap.
func toBigEndian(t *testing.T, orig []byte) []byte {
	f, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	s := &swapper{t: t, b: bytes.Clone(orig), ids: map[uint64]int{}, unused: map[RecordType]bool{}}
	copy(s.b, magicBE)
	attrSize := int64(le.Uint64(orig[16:]))
	attrsOff, attrsSize := int64(le.Uint64(orig[24:])), int64(le.Uint64(orig[32:]))
	dataOff, dataSize := int64(le.Uint64(orig[40:])), int64(le.Uint64(orig[48:]))
	for i := int64(8); i < 72; i += 8 {
		s.u64(i)
	}
	for i := int64(0); i < attrsSize/attrSize; i++ {
		e := attrsOff + i*attrSize
		idsOff, idsSize := int64(le.Uint64(orig[e+attrSize-16:])), int64(le.Uint64(orig[e+attrSize-8:]))
		s.addAttr(f.Events()[i].Attr, f.Events()[i].IDs)
		s.swapAttr(e, attrSize-16)
		s.u64s(e+attrSize-16, 2)
		s.u64s(idsOff, idsSize/8)
	}
	for p := dataOff; p < dataOff+dataSize; {
		p += s.swapRecord(p)
	}
	// Features: keep those converted here, in bit order, and rebuild the
	// section table (whose length changes with the bitmap).
	fs := f.Features()
	type sec struct {
		id        Feature
		off, size int64
	}
	var keep []sec
	for _, id := range fs.IDs() {
		b, err := fs.Raw(id)
		if err != nil {
			t.Fatal(err)
		}
		// Locate the payload: Raw copies it, find its section by content.
		tab := dataOff + dataSize
		var off int64 = -1
		for i, sid := range fs.IDs() {
			if sid == id {
				off = int64(le.Uint64(orig[tab+16*int64(i):]))
			}
		}
		p := off
		switch id {
		case FeatureEventDesc:
			nr := int64(le.Uint32(orig[p:]))
			sz := int64(le.Uint32(orig[p+4:]))
			s.u32(p)
			s.u32(p + 4)
			p += 8
			for i := int64(0); i < nr; i++ {
				s.swapAttr(p, sz)
				p += sz
				nids := int64(le.Uint32(orig[p:]))
				s.u32(p)
				p = s.swapString(p + 4)
				s.u64s(p, nids)
				p += 8 * nids
			}
		case FeatureBuildID:
			for q := p; q < p+int64(len(b)); {
				n := int64(le.Uint16(orig[q+6:]))
				s.u32(q)
				s.u16(q + 4)
				s.u16(q + 6)
				s.u32(q + 8)
				q += n
			}
		default:
			// The features a pipe stream also carries (HEADER_FEATURE).
			if !s.swapFeaturePayload(id, p, int64(len(b))) {
				continue
			}
		}
		keep = append(keep, sec{id, off, int64(len(b))})
	}
	// The bitmap: unsigned long words in big-endian order (bit n in word
	// n/64, bit n%64).
	var words [4]uint64
	for _, k := range keep {
		words[k.id/64] |= 1 << (k.id % 64)
	}
	for w := range words {
		be.PutUint64(s.b[72+8*w:], words[w])
	}
	tab := dataOff + dataSize
	for i, k := range keep {
		be.PutUint64(s.b[tab+16*int64(i):], uint64(k.off))
		be.PutUint64(s.b[tab+16*int64(i)+8:], uint64(k.size))
	}
	for typ := range s.unused {
		t.Errorf("the converter does not know %v records; the test would compare them unconverted", typ)
	}
	return s.b
}

// dumpRecords prints every record in full, with the events it refers to.
func dumpRecords(t *testing.T, f *File) []string {
	var out []string
	rs := f.Records(RecordsOptions{})
	for rs.Next() {
		out = append(out, fmt.Sprintf("%T %+v", rs.Record(), rs.Record()))
	}
	if rs.Err() != nil {
		t.Fatal(rs.Err())
	}
	return out
}

func TestBigEndianCopy(t *testing.T) {
	t.Parallel()
	var paths []string
	for _, n := range []string{"cshared-fp.data", "twoevents.data", "cshared-dwarf.data", "buildid-mmap.data"} {
		paths = append(paths, rdFixtures+"/"+n)
	}
	for _, n := range []string{"perf.data.branch-4.14", "perf.data.branch_stack_hw_index", "perf.data.callgraph-3.8"} {
		paths = append(paths, corpusDir+"/"+n)
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Skipf("%v", err)
			}
			bigb := toBigEndian(t, orig)
			lf, err := NewFile(bytes.NewReader(orig), int64(len(orig)))
			if err != nil {
				t.Fatal(err)
			}
			bf, err := NewFile(bytes.NewReader(bigb), int64(len(bigb)))
			if err != nil {
				t.Fatal(err)
			}
			if bf.ByteOrder() != binary.BigEndian {
				t.Fatal("not read as big-endian")
			}
			if w := bf.Warnings(); len(w) != 0 {
				t.Errorf("warnings: %q", w)
			}
			if fmt.Sprintf("%+v", bf.Events()) != fmt.Sprintf("%+v", lf.Events()) {
				t.Errorf("events differ:\n%+v\n%+v", bf.Events(), lf.Events())
			}
			for _, get := range []func(*Features) (string, error){(*Features).Hostname, (*Features).OSRelease, (*Features).Arch, (*Features).Version} {
				a, aerr := get(lf.Features())
				b, berr := get(bf.Features())
				if a != b || (aerr == nil) != (berr == nil) {
					t.Errorf("feature: %q (%v) vs %q (%v)", b, berr, a, aerr)
				}
			}
			lb, err1 := lf.BuildIDs()
			bb, err2 := bf.BuildIDs()
			if fmt.Sprint(lb) != fmt.Sprint(bb) || (err1 == nil) != (err2 == nil) {
				t.Errorf("build-ids differ: %v (%v) vs %v (%v)", bb, err2, lb, err1)
			}
			want, got := dumpRecords(t, lf), dumpRecords(t, bf)
			if len(want) != len(got) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("record %d differs:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
		})
	}
}
