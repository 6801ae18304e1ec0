package check

import "github.com/perfcheck/perfcheck/addrspace"

// Kind says what a mapping is (addrspace.Kind): a DSO's kind is that of
// the mappings it was made from.
type Kind = addrspace.Kind

// Mapping kinds, as package addrspace gives them.
const (
	KindFile     = addrspace.KindFile
	KindKernel   = addrspace.KindKernel
	KindModule   = addrspace.KindModule
	KindVDSO     = addrspace.KindVDSO
	KindVsyscall = addrspace.KindVsyscall
	KindAnon     = addrspace.KindAnon
	KindJIT      = addrspace.KindJIT
	KindUnknown  = addrspace.KindUnknown
	KindGuest    = addrspace.KindGuest
)
