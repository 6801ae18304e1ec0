package perfdata

import (
	"encoding/binary"
	"math"
)

// parser decodes raw records into the record structs it owns; each type has
// one struct that every record of that type reuses (the reuse rule of
// Records.Next).
type parser struct {
	order  binary.ByteOrder
	little bool // order is binary.LittleEndian
	name   string
	events *eventSet
	// onAttr, onFeature, onBuildID and onEventUpdate let the owner keep
	// pipe-mode metadata (HEADER_ATTR, HEADER_FEATURE, HEADER_BUILD_ID,
	// EVENT_UPDATE) as it streams past.
	onUserRecord func(rec *rawRecord, r Record)
	// headersOnly is RecordsOptions.SampleHeadersOnly.
	headersOnly bool
	// sampleBare is set while sample holds no field past its header
	// (as resetSample leaves it), as a header-only sample must.
	sampleBare bool

	intern    map[string]string
	whatCache [2][128]string

	mmap        Mmap
	mmap2       Mmap2
	lost        Lost
	comm        Comm
	exit        Exit
	fork        Fork
	throttle    Throttle
	read        Read
	sample      Sample
	chainBuf    []uint64 // sample.Callchain when it cannot be the record's bytes
	aux         Aux
	itrace      ItraceStart
	lostSamples LostSamples
	sw          Switch
	ns          Namespaces
	ksym        Ksymbol
	bpf         BPFEvent
	cgroup      Cgroup
	poke        TextPoke
	hwid        AuxOutputHWID
	deferred    CallchainDeferred

	attr       HeaderAttr
	evType     EventType
	tracing    TracingData
	round      FinishedRound
	idIndex    IDIndex
	auxInfo    AuxtraceInfo
	auxtrace   Auxtrace
	auxErr     AuxtraceError
	threadMap  ThreadMap
	cpuMap     CPUMap
	statConfig StatConfig
	stat       Stat
	statRound  StatRound
	evUpdate   EventUpdate
	timeConv   TimeConv
	feature    HeaderFeature
	compressed Compressed
	finInit    FinishedInit
	unknown    Unknown

	ext parserExt // record types decoded with other parts of the package
	// join gives samples the callchains simpleperf's CALLCHAIN records
	// carry for them (Records.Next).
	join callchainJoin
}

const maxInterned = 1 << 14

// what names a record type for error messages; the names are built once so
// that decoding does not allocate.
func (p *parser) what(t RecordType, compressed bool) string {
	c := 0
	if compressed {
		c = 1
	}
	if t < 128 {
		if s := p.whatCache[c][t]; s != "" {
			return s
		}
	}
	s := t.String() + " record"
	if compressed {
		s += " in compressed data"
	}
	if t < 128 {
		p.whatCache[c][t] = s
	}
	return s
}

// str returns b as a string, sharing one copy for repeated values (file
// names and comms repeat across processes) so that steady-state decoding
// does not allocate.
func (p *parser) str(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if p.intern == nil {
		p.intern = make(map[string]string)
	}
	if len(p.intern) < maxInterned {
		p.intern[s] = s
	}
	return s
}

// cstr reads a NUL-terminated string padded within the next n bytes.
func (p *parser) cstr(d *decoder, n int) string {
	b := d.bytes(n)
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return p.str(b)
}

// decode turns rec into a Record. For kernel records it finds the event and
// decodes the sample_id trailer; a record that does not fit its declared
// layout is a *FormatError at the record's offset.
func (p *parser) decode(rec *rawRecord) (Record, error) {
	h := RecordHeader{
		RecType: rec.typ, Misc: rec.misc, Size: rec.size,
		Offset: rec.off, Compressed: rec.compressed, Part: rec.part,
		EventIndex: -1,
	}
	what := p.what(rec.typ, rec.compressed)
	if !rec.typ.IsUser() {
		return p.decodeKernel(rec, h, what)
	}
	d := newDecoder(rec.data, rec.off, p.order, what)
	d.skip(8)
	var r Record
	switch rec.typ {
	case RecordHeaderAttr:
		r = p.decodeHeaderAttr(&d, h)
	case RecordHeaderEventType:
		x := &p.evType
		*x = EventType{RecordHeader: h}
		x.EventID = d.u64()
		x.Name = p.cstr(&d, min(64, d.remaining()))
		r = x
	case RecordTracingData:
		x := &p.tracing
		*x = TracingData{RecordHeader: h, DataSize: d.u32(), DataOffset: rec.extraOff, Data: rec.extra}
		r = x
	case RecordFinishedRound:
		p.round = FinishedRound{RecordHeader: h}
		r = &p.round
	case RecordIDIndex:
		r = p.decodeIDIndex(&d, h)
	case RecordAuxtraceInfo:
		x := &p.auxInfo
		priv := x.Priv
		*x = AuxtraceInfo{RecordHeader: h}
		x.AuxType = d.u32()
		d.u32()
		x.Priv = d.u64s(priv, uint64(d.remaining()/8), "priv")
		r = x
	case RecordAuxtrace:
		x := &p.auxtrace
		*x = Auxtrace{RecordHeader: h}
		x.DataSize = d.u64()
		x.AuxOffset = d.u64()
		x.Reference = d.u64()
		x.Idx = d.u32()
		x.TID = d.u32()
		x.CPU = d.u32()
		x.DataOffset = rec.extraOff
		r = x
	case RecordAuxtraceError:
		r = p.decodeAuxtraceError(&d, h)
	case RecordThreadMap:
		x := &p.threadMap
		ents := x.Entries[:0]
		*x = ThreadMap{RecordHeader: h}
		nr := d.u64()
		if d.err == nil && nr > uint64(d.remaining())/24 {
			d.fail(errCount, "thread map of %d entries cannot fit in %d bytes", nr, d.remaining())
		}
		for i := uint64(0); i < nr && d.err == nil; i++ {
			pid := d.u64()
			ents = append(ents, ThreadMapEntry{PID: pid, Comm: p.cstr(&d, 16)})
		}
		x.Entries = ents
		r = x
	case RecordCPUMap:
		x := &p.cpuMap
		cpus := x.CPUs[:0]
		*x = CPUMap{RecordHeader: h}
		x.CPUs, x.AnyCPU = decodeCPUMapData(&d, cpus)
		r = x
	case RecordStatConfig:
		x := &p.statConfig
		ents := x.Entries[:0]
		*x = StatConfig{RecordHeader: h}
		nr := d.u64()
		if d.err == nil && nr > uint64(d.remaining())/16 {
			d.fail(errCount, "stat config of %d entries cannot fit in %d bytes", nr, d.remaining())
		}
		for i := uint64(0); i < nr && d.err == nil; i++ {
			ents = append(ents, StatConfigEntry{Tag: d.u64(), Val: d.u64()})
		}
		x.Entries = ents
		r = x
	case RecordStat:
		x := &p.stat
		*x = Stat{RecordHeader: h}
		x.ID = d.u64()
		x.CPU = d.u32()
		x.Thread = d.u32()
		x.Val = d.u64()
		x.Ena = d.u64()
		x.Run = d.u64()
		r = x
	case RecordStatRound:
		x := &p.statRound
		*x = StatRound{RecordHeader: h, RoundType: d.u64(), Time: d.u64()}
		r = x
	case RecordEventUpdate:
		r = p.decodeEventUpdate(&d, h)
	case RecordTimeConv:
		x := &p.timeConv
		*x = TimeConv{RecordHeader: h}
		x.TimeShift = d.u64()
		x.TimeMult = d.u64()
		x.TimeZero = d.u64()
		// The extended fields exist when header.size covers them
		// (event_contains in tools/perf/util/session.c).
		if d.remaining() >= 24 {
			x.Extended = true
			x.TimeCycles = d.u64()
			x.TimeMask = d.u64()
			x.CapUserTimeZero = d.u8() != 0
			x.CapUserTimeShort = d.u8() != 0
		}
		r = x
	case RecordHeaderFeature:
		x := &p.feature
		*x = HeaderFeature{RecordHeader: h}
		x.FeatureID = d.u64()
		x.Data = d.bytes(d.remaining())
		r = x
	case RecordCompressed:
		p.compressed = Compressed{RecordHeader: h, DataSize: int(rec.size) - 8}
		r = &p.compressed
	case RecordCompressed2:
		x := &p.compressed
		*x = Compressed{RecordHeader: h}
		x.DataSize = int(d.u64())
		r = x
	case RecordFinishedInit:
		p.finInit = FinishedInit{RecordHeader: h}
		r = &p.finInit
	default:
		if x, ok := p.decodeExt(&d, h, rec); ok {
			r = x
			break
		}
		p.unknown = Unknown{RecordHeader: h, Data: rec.data}
		r = &p.unknown
	}
	if d.err != nil {
		return nil, d.err
	}
	if p.onUserRecord != nil {
		p.onUserRecord(rec, r)
	}
	return r, nil
}

func (p *parser) decodeHeaderAttr(d *decoder, h RecordHeader) Record {
	x := &p.attr
	ids := x.IDs[:0]
	*x = HeaderAttr{RecordHeader: h}
	// attr.size decides where the ids start (perf_record_header_attr_id).
	if !d.need(attrSizeVer0) {
		return x
	}
	size := int(d.order.Uint32(d.b[d.off+4:]))
	if size == 0 {
		size = attrSizeVer0
	}
	if size < attrSizeVer0 || size > d.remaining() || size%8 != 0 {
		d.fail(ErrMalformed, "attr size %d does not fit the record", size)
		return x
	}
	x.Attr = decodeAttr(d.bytes(size), d.order)
	x.IDs = d.u64s(ids, uint64(d.remaining()/8), "ids")
	return x
}

func (p *parser) decodeIDIndex(d *decoder, h RecordHeader) Record {
	x := &p.idIndex
	ents := x.Entries[:0]
	*x = IDIndex{RecordHeader: h}
	nr := d.u64()
	if d.err == nil && nr > uint64(d.remaining())/32 {
		d.fail(errCount, "id index of %d entries cannot fit in %d bytes", nr, d.remaining())
	}
	for i := uint64(0); i < nr && d.err == nil; i++ {
		ents = append(ents, IDIndexEntry{ID: d.u64(), Idx: d.u64(), CPU: d.u64(), TID: d.u64()})
	}
	// A second array of {machine_pid, vcpu} follows when the record has
	// room for it (perf_event__process_id_index).
	if d.err == nil && nr > 0 && uint64(d.remaining())/16 >= nr {
		for i := range ents {
			ents[i].MachinePID = d.u64()
			ents[i].VCPU = d.u64()
		}
	}
	x.Entries = ents
	return x
}

func (p *parser) decodeAuxtraceError(d *decoder, h RecordHeader) Record {
	x := &p.auxErr
	*x = AuxtraceError{RecordHeader: h}
	x.ErrType = d.u32()
	x.Code = d.u32()
	x.CPU = d.u32()
	x.PID = d.u32()
	x.TID = d.u32()
	x.Fmt = d.u32()
	x.IP = d.u64()
	if x.Fmt >= 1 {
		x.Time = d.u64()
	}
	x.Msg = p.cstr(d, min(64, d.remaining()))
	if x.Fmt >= 2 && d.remaining() >= 8 {
		x.MachinePID = d.u32()
		x.VCPU = d.u32()
	}
	return x
}

func (p *parser) decodeEventUpdate(d *decoder, h RecordHeader) Record {
	x := &p.evUpdate
	cpus := x.CPUs[:0]
	*x = EventUpdate{RecordHeader: h}
	x.UpdateType = d.u64()
	x.ID = d.u64()
	switch x.UpdateType {
	case EventUpdateUnit:
		x.Unit = p.cstr(d, d.remaining())
	case EventUpdateName:
		x.Name = p.cstr(d, d.remaining())
	case EventUpdateScale:
		x.Scale = math.Float64frombits(d.u64())
	case EventUpdateCPUs:
		x.CPUs, _ = decodeCPUMapData(d, cpus)
	}
	return x
}

// decodeCPUMapData decodes a packed perf_record_cpu_map_data
// (cpu_map__new_data in tools/perf/util/cpumap.c; docs/perfdata-format.md)
// into a CPU list.
func decodeCPUMapData(d *decoder, cpus []uint32) ([]uint32, bool) {
	cpus = cpus[:0]
	switch typ := d.u16(); typ {
	case 0: // PERF_CPU_MAP__CPUS
		nr := d.u16()
		if d.err == nil && int(nr) > d.remaining()/2 {
			d.fail(errCount, "cpu list of %d entries cannot fit in %d bytes", nr, d.remaining())
			return cpus, false
		}
		for i := 0; i < int(nr) && d.err == nil; i++ {
			cpus = append(cpus, uint32(d.u16()))
		}
	case 1: // PERF_CPU_MAP__MASK
		nr := int(d.u16())
		longSize := d.u16()
		switch longSize {
		case 4:
			if d.err == nil && nr > d.remaining()/4 {
				d.fail(errCount, "cpu mask of %d words cannot fit in %d bytes", nr, d.remaining())
				return cpus, false
			}
			for i := 0; i < nr && d.err == nil; i++ {
				w := d.u32()
				if len(cpus) > maxCPUs {
					break
				}
				for b := 0; b < 32; b++ {
					if w&(1<<b) != 0 {
						cpus = append(cpus, uint32(i*32+b))
					}
				}
			}
		case 8:
			d.u32() // padding to the u64 array
			if d.err == nil && nr > d.remaining()/8 {
				d.fail(errCount, "cpu mask of %d words cannot fit in %d bytes", nr, d.remaining())
				return cpus, false
			}
			for i := 0; i < nr && d.err == nil; i++ {
				w := d.u64()
				if len(cpus) > maxCPUs {
					break
				}
				for b := 0; b < 64; b++ {
					if w&(1<<b) != 0 {
						cpus = append(cpus, uint32(i*64+b))
					}
				}
			}
		default:
			d.fail(ErrMalformed, "cpu mask long_size %d", longSize)
		}
	case 2: // PERF_CPU_MAP__RANGE_CPUS
		any := d.u8() != 0
		d.u8()
		lo, hi := d.u16(), d.u16()
		if d.err == nil && hi < lo {
			d.fail(ErrMalformed, "cpu range %d-%d", lo, hi)
		}
		for c := int(lo); c <= int(hi) && d.err == nil; c++ {
			cpus = append(cpus, uint32(c))
		}
		return cpus, any
	default:
		d.fail(ErrMalformed, "unknown cpu map type %d", typ)
	}
	if len(cpus) > maxCPUs {
		d.fail(ErrMalformed, "cpu map of %d CPUs", len(cpus))
	}
	return cpus, false
}

// maxCPUs bounds a decoded CPU map: a mask record of a few KiB could
// otherwise list millions of CPUs (perf's own limit is 4096, MAX_NR_CPUS).
const maxCPUs = 1 << 16

// decodeSampleRecord decodes data, the whole SAMPLE record at off of the
// event with attr a, into p.sample, whose RecordHeader the caller has set
// (Records.nextSampleInPlace sets it where the record lies, decodeKernel
// from the raw record).
func (p *parser) decodeSampleRecord(data []byte, off int64, a *Attr, what string) error {
	if a.SampleType >= sampleTypeMax {
		return &FormatError{File: p.name, Offset: off, Msg: what + ": unknown sample_type bits", Err: ErrMalformed}
	}
	d := newDecoder(data, off, p.order, what)
	d.skip(8)
	p.sampleBare = false
	decodeSample(&d, a, &p.sample, &p.chainBuf)
	return d.err
}

// decodeKernel decodes a kernel record (type < 64).
func (p *parser) decodeKernel(rec *rawRecord, h RecordHeader, what string) (Record, error) {
	data := rec.data
	var a *Attr
	if p.events != nil {
		h.EventIndex = p.events.lookup(rec.typ, data, p.order)
		if h.EventIndex >= 0 {
			a = &p.events.events[h.EventIndex].Attr
		}
	}
	if rec.typ == RecordSample {
		if a == nil {
			return nil, &FormatError{File: p.name, Offset: rec.off, Msg: what + ": a sample before any event (attr) was described"}
		}
		p.sample.RecordHeader = h
		if err := p.decodeSampleRecord(data, rec.off, a, what); err != nil {
			return nil, err
		}
		if p.headersOnly {
			// Off the in-place path (big-endian input, a record
			// across two reads, time order): decoded whole, then
			// cleared past the header.
			resetSample(&p.sample, a.SampleType)
			p.sampleBare = true
		}
		return &p.sample, nil
	}
	// The sample_id trailer is the last id_hdr_size bytes
	// (perf_evsel__parse_id_sample walks back from the end).
	body := data
	if a != nil && a.SampleIDAll() {
		n := idHeaderSize(a.SampleType)
		if len(data)-8 < n {
			return nil, &FormatError{File: p.name, Offset: rec.off, Msg: what + ": too short for its sample_id trailer", Err: ErrMalformed}
		}
		decodeSampleID(data[len(data)-n:], p.order, a.SampleType, &h.SampleID)
		body = data[:len(data)-n]
	}
	d := newDecoder(body, rec.off, p.order, what)
	d.skip(8)
	var r Record
	switch rec.typ {
	case RecordMmap:
		x := &p.mmap
		*x = Mmap{RecordHeader: h}
		x.PID, x.TID = d.u32(), d.u32()
		x.Addr, x.Len, x.PgOff = d.u64(), d.u64(), d.u64()
		x.Filename = p.cstr(&d, d.remaining())
		r = x
	case RecordMmap2:
		x := &p.mmap2
		*x = Mmap2{RecordHeader: h, bid: x.bid}
		x.PID, x.TID = d.u32(), d.u32()
		x.Addr, x.Len, x.PgOff = d.u64(), d.u64(), d.u64()
		if x.HasBuildID() {
			n := int(d.u8())
			d.skip(3)
			b := d.bytes(20)
			if d.err == nil {
				n = min(n, 20)
				copy(x.bid[:], b)
				x.BuildID = x.bid[:n:n]
			}
		} else {
			x.Maj, x.Min = d.u32(), d.u32()
			x.Ino, x.InoGeneration = d.u64(), d.u64()
		}
		x.Prot, x.Flags = d.u32(), d.u32()
		x.Filename = p.cstr(&d, d.remaining())
		r = x
	case RecordLost:
		x := &p.lost
		*x = Lost{RecordHeader: h, ID: d.u64(), Lost: d.u64()}
		r = x
	case RecordComm:
		x := &p.comm
		*x = Comm{RecordHeader: h}
		x.PID, x.TID = d.u32(), d.u32()
		x.Comm = p.cstr(&d, d.remaining())
		r = x
	case RecordExit:
		x := &p.exit
		*x = Exit{RecordHeader: h}
		x.PID, x.PPID, x.TID, x.PTID = d.u32(), d.u32(), d.u32(), d.u32()
		x.Time = d.u64()
		r = x
	case RecordFork:
		x := &p.fork
		*x = Fork{RecordHeader: h}
		x.PID, x.PPID, x.TID, x.PTID = d.u32(), d.u32(), d.u32(), d.u32()
		x.Time = d.u64()
		r = x
	case RecordThrottle, RecordUnthrottle:
		x := &p.throttle
		*x = Throttle{RecordHeader: h, Time: d.u64(), ID: d.u64(), StreamID: d.u64()}
		r = x
	case RecordRead:
		x := &p.read
		vals := x.Values.Values
		*x = Read{RecordHeader: h}
		x.Values.Values = vals
		x.PID, x.TID = d.u32(), d.u32()
		var rf ReadFormat
		if a != nil {
			rf = a.ReadFormat
		}
		decodeReadValues(&d, rf, &x.Values)
		r = x
	case RecordAux:
		x := &p.aux
		*x = Aux{RecordHeader: h, AuxOffset: d.u64(), AuxSize: d.u64(), Flags: d.u64()}
		r = x
	case RecordItraceStart:
		x := &p.itrace
		*x = ItraceStart{RecordHeader: h}
		x.PID, x.TID = d.u32(), d.u32()
		r = x
	case RecordLostSamples:
		x := &p.lostSamples
		*x = LostSamples{RecordHeader: h, Lost: d.u64()}
		r = x
	case RecordSwitch, RecordSwitchCPUWide:
		x := &p.sw
		*x = Switch{RecordHeader: h}
		if rec.typ == RecordSwitchCPUWide {
			x.NextPrevPID, x.NextPrevTID = d.u32(), d.u32()
		}
		r = x
	case RecordNamespaces:
		x := &p.ns
		nss := x.Namespaces[:0]
		*x = Namespaces{RecordHeader: h}
		x.PID, x.TID = d.u32(), d.u32()
		nr := d.u64()
		if d.err == nil && nr > uint64(d.remaining())/16 {
			d.fail(errCount, "%d namespaces cannot fit in %d bytes", nr, d.remaining())
		}
		for i := uint64(0); i < nr && d.err == nil; i++ {
			nss = append(nss, Namespace{Dev: d.u64(), Ino: d.u64()})
		}
		x.Namespaces = nss
		r = x
	case RecordKsymbol:
		x := &p.ksym
		*x = Ksymbol{RecordHeader: h}
		x.Addr = d.u64()
		x.Len = d.u32()
		x.KsymType = d.u16()
		x.Flags = d.u16()
		x.Name = p.cstr(&d, d.remaining())
		r = x
	case RecordBPFEvent:
		x := &p.bpf
		*x = BPFEvent{RecordHeader: h}
		x.EventType = d.u16()
		x.Flags = d.u16()
		x.ID = d.u32()
		copy(x.Tag[:], d.bytes(8))
		r = x
	case RecordCgroup:
		x := &p.cgroup
		*x = Cgroup{RecordHeader: h}
		x.ID = d.u64()
		x.Path = p.cstr(&d, d.remaining())
		r = x
	case RecordTextPoke:
		x := &p.poke
		*x = TextPoke{RecordHeader: h}
		x.Addr = d.u64()
		oldLen, newLen := int(d.u16()), int(d.u16())
		x.Old = d.bytes(oldLen)
		x.New = d.bytes(newLen)
		r = x
	case RecordAuxOutputHWID:
		x := &p.hwid
		*x = AuxOutputHWID{RecordHeader: h, HWID: d.u64()}
		r = x
	case RecordCallchainDeferred:
		x := &p.deferred
		ips := x.IPs
		*x = CallchainDeferred{RecordHeader: h}
		x.Cookie = d.u64()
		nr := d.u64()
		x.IPs = d.u64s(ips, nr, "callchain")
		r = x
	default:
		p.unknown = Unknown{RecordHeader: h, Data: rec.data}
		r = &p.unknown
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
