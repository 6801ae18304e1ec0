//go:build !linux

package check

// hugeInt32s is make([]int32, 0, n) where there is no MADV_HUGEPAGE.
func hugeInt32s(n int) []int32 { return make([]int32, 0, n) }
