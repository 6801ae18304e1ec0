package check

import "github.com/perfcheck/perfcheck/addrspace"

// MappingRange is where a DSO was mapped: the first executable mapping
// the recording made of it (MMAP/MMAP2 start, end and file offset). A DSO
// shared by several processes is mapped at an address of each one's own;
// this is the first.
type MappingRange struct {
	PID          uint32
	Start, Limit uint64 // [Start, Limit)
	Pgoff        uint64 // file offset of Start
}

// firstMaps records each DSO's first executable mapping.
type firstMaps map[*DSO]MappingRange

// add notes m, a new mapping of d, if it is d's first executable one.
func (fm firstMaps) add(m *addrspace.Mapping, d *DSO) {
	if !m.Exec {
		return
	}
	if _, ok := fm[d]; !ok {
		fm[d] = MappingRange{PID: m.PID, Start: m.Start, Limit: m.Limit, Pgoff: m.Pgoff}
	}
}

// FirstMapping returns the first executable mapping the recording made of
// d, when the Result comes from Analyze.
func (r *Result) FirstMapping(d *DSO) (MappingRange, bool) {
	m, ok := r.firstMaps[d]
	return m, ok
}
