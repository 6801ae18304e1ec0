package check

// sampleIPs keeps, for Options.KeepSamples, the runtime address of every
// frame of every sample: perf script prints a sample's own IP as recorded
// (the absolute address, for a recording without callchains), which the
// deduplicated stacks, made of (DSO, file offset) locations, no longer
// hold. Address sequences repeat as much as stacks do, so each distinct one
// is stored once and a sample keeps its index.
type sampleIPs struct {
	seqs  [][]uint64
	idx   map[string]int32
	ids   []int32 // per kept sample, in delivery order
	key   []byte
	frame []uint64
}

func newSampleIPs() *sampleIPs { return &sampleIPs{idx: map[string]int32{}} }

// add records the addresses of the sample just fed to s, one per location
// of its resolved stack, in the same order: the sample IP, the callchain
// entries (markers skipped, a first entry equal to the IP dropped, as
// session.sample does), then the user frames unwound from a stack copy.
func (k *sampleIPs) add(s *session, e *sampleEvent) {
	if len(s.kept) == 0 {
		return
	}
	n := len(s.stack(int(s.kept[len(s.kept)-1].stack)))
	f := append(k.frame[:0], e.IP)
	first := true
	for _, ip := range e.Callchain {
		if ip >= contextMax {
			continue
		}
		if first {
			first = false
			if ip == e.IP {
				continue
			}
		}
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
	kb := k.key[:0]
	for _, ip := range f {
		kb = le64(kb, ip)
	}
	k.key = kb
	id, ok := k.idx[string(kb)]
	if !ok {
		id = int32(len(k.seqs))
		k.seqs = append(k.seqs, append([]uint64(nil), f...))
		k.idx[string(kb)] = id
	}
	k.ids = append(k.ids, id)
}
