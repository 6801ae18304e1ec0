package check

import "github.com/perfcheck/perfcheck/addrspace"

// firstMaps records each DSO's first executable mapping. Mappings are
// immutable once the tracker makes them, so the pointer is kept.
type firstMaps map[*DSO]*addrspace.Mapping

// add notes m, a new mapping of d, if it is d's first executable one.
func (fm firstMaps) add(m *addrspace.Mapping, d *DSO) {
	if !m.Exec {
		return
	}
	if _, ok := fm[d]; !ok {
		fm[d] = m
	}
}

// FirstMapping returns the first executable mapping the recording made of
// d (its MMAP or MMAP2 record's start, end and file offset, Pgoff), when
// the Result comes from Analyze. A DSO shared by several processes is
// mapped at an address of each one's own; this is the first.
func (r *Result) FirstMapping(d *DSO) (addrspace.Mapping, bool) {
	m, ok := r.firstMaps[d]
	if !ok {
		return addrspace.Mapping{}, false
	}
	return *m, true
}
