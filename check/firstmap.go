package check

// MappingRange is where a DSO was mapped: the first executable mapping
// the recording made of it (MMAP/MMAP2 start, end and file offset). A DSO
// shared by several processes is mapped at an address of each one's own;
// this is the first.
type MappingRange struct {
	PID          int32
	Start, Limit uint64 // [Start, Limit)
	Pgoff        uint64 // file offset of Start
}

// firstMaps records each DSO's first executable mapping.
type firstMaps map[*DSO]MappingRange

// watch makes the session's tracker report every new mapping to fm too.
func (fm firstMaps) watch(s *Session) {
	prev := s.tracker.onMap
	s.tracker.onMap = func(m *Mapping) {
		if prev != nil {
			prev(m)
		}
		if m.DSO == nil || m.Event == nil || !m.Event.Exec {
			return
		}
		if _, ok := fm[m.DSO]; !ok {
			fm[m.DSO] = MappingRange{PID: m.PID, Start: m.Start, Limit: m.Limit, Pgoff: m.Pgoff}
		}
	}
}

// FirstMapping returns the first executable mapping the recording made of
// d, when the Result comes from Analyze, AnalyzeFile or AnalyzeReader.
func (r *Result) FirstMapping(d *DSO) (MappingRange, bool) {
	m, ok := r.firstMaps[d]
	return m, ok
}
