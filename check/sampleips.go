package check

// sampleIPs keeps, for Options.KeepSamples, the runtime address of every
// frame of every sample: perf script prints a sample's own IP as recorded
// (the absolute address, for a recording without callchains), which the
// deduplicated stacks, made of (DSO, file offset) locations, no longer
// hold. Address sequences repeat as much as stacks do, so each distinct one
// is stored once and a sample keeps its index.
type sampleIPs struct {
	seqs  [][]uint64
	idx   map[string]int32 // by the bytes of a sequence
	ids   []int32          // per kept sample, in delivery order
	frame []uint64
	// extras, when the session keeps them (session.keepExtra), are
	// each kept sample's fields perf script -F prints beyond its stack,
	// in delivery order, their registers in regs.
	extras []sampleExtra
	regs   []uint64
	raw    []byte
}

func newSampleIPs() *sampleIPs { return &sampleIPs{idx: map[string]int32{}} }

// add records the addresses of the sample just fed to s, one per location
// of its resolved stack, in the same order: the sample IP, the callchain
// frames (sampleEvent.chainFrames, as stackOf resolves them), then the user
// frames unwound from a stack copy. stackOf's own walk cannot serve: a
// stack met before is found by its raw addresses without one.
func (k *sampleIPs) add(s *session, e *sampleEvent) {
	if len(s.kept) == 0 {
		return
	}
	n := len(s.stack(int(s.kept[len(s.kept)-1].stack)))
	f := append(k.frame[:0], e.IP)
	for _, ip := range e.chainFrames {
		f = append(f, ip)
	}
	if rem := n - len(f); rem > 0 && e.User != nil {
		// The unwound user frames: the session's buffer holds them
		// for the sample just fed, its leaf possibly repeating the IP.
		u := s.userBuf
		if len(u) > rem {
			u = u[len(u)-rem:]
		}
		f = append(f, u...)
	}
	for len(f) < n {
		f = append(f, 0) // not expected: an address that could not be recovered
	}
	f = f[:n]
	k.frame = f
	id, ok := k.idx[string(u64Bytes(f))]
	if !ok {
		id = int32(len(k.seqs))
		k.seqs = append(k.seqs, append([]uint64(nil), f...))
		k.idx[string(u64Bytes(f))] = id
	}
	k.ids = append(k.ids, id)
	if e.extra != nil {
		k.addExtra(s, e)
	}
}

// addExtra keeps e's extra fields, with the location of its address
// where perf names it (session.resolveAddr: the address space as it is
// at the sample's time, which is now).
func (k *sampleIPs) addExtra(s *session, e *sampleEvent) {
	x := *e.extra
	n := int32(x.intrN) + int32(x.userN)
	lo := len(k.regs)
	k.regs = append(k.regs, e.extraWords[x.regsLo:x.regsLo+n]...)
	x.regsLo = int32(lo)
	rlo := len(k.raw)
	k.raw = append(k.raw, e.extraBytes[x.rawLo:x.rawLo+x.rawN]...)
	x.rawLo = int32(rlo)
	if e.Event >= 0 && e.Event < len(s.addrNamed) && s.addrNamed[e.Event] {
		x.addrLoc = s.resolveAddr(e, x.addr)
	}
	k.extras = append(k.extras, x)
}
