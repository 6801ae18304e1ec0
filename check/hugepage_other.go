//go:build !linux

package check

import "unsafe"

// adviseHuge does nothing where there is no MADV_HUGEPAGE.
func adviseHuge(unsafe.Pointer, uintptr) {}

// hugeInt32s is make([]int32, 0, n) where there is no MADV_HUGEPAGE.
func hugeInt32s(n int) []int32 { return make([]int32, 0, n) }
