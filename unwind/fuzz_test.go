package unwind

import (
	"debug/elf"
	"testing"
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
			fd.rowAt(fd.start+a%(fd.end-fd.start+1), &st)
		}
		if fd := ct.find(a); fd != nil {
			fd.rowAt(a, &st)
		}
	})
}
