package unwind

import (
	"debug/elf"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCFI feeds arbitrary .eh_frame bytes to the parser and the rule
// machine: errors, never a panic or a runaway.
func FuzzCFI(f *testing.F) {
	if ef, err := elf.Open("/bin/true"); err == nil {
		if sec := ef.Section(".eh_frame"); sec != nil && sec.Size <= maxEHFrame {
			if b, err := sec.Data(); err == nil {
				f.Add(b, uint64(0x1000))
			}
		}
		ef.Close()
	}
	f.Add([]byte("\x14\x00\x00\x00\x00\x00\x00\x00\x01zR\x00\x01\x78\x10\x01\x1b\x0c\x07\x08\x90\x01\x00\x00"), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, a uint64) {
		var ct Table
		if err := ct.parse(data, 0x1000, 0); err != nil {
			return
		}
		var st state
		for _, fd := range ct.fdes {
			require.Less(t, fd.start, fd.end, "an FDE's range neither is empty nor wraps")
			in := a
			if span := fd.end - fd.start; span != ^uint64(0) { // else every a is in the range
				in %= span + 1
			}
			fd.rowAt(fd.start+in, &st)
		}
		if fd := ct.find(a); fd != nil {
			fd.rowAt(a, &st)
		}
	})
}
