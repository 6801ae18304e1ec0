package elfload

import (
	"debug/elf"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	// A text segment and a data segment that share the file page at
	// 0x2000, laid out as GNU ld does.
	text := Of(&elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0x1000, Vaddr: 0x401000, Filesz: 0x1100})
	data := Of(&elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x2100, Vaddr: 0x403100, Filesz: 0x200})
	assert.Equal(t, Segment{Off: 0x1000, Filesz: 0x1100, Vaddr: 0x401000, Exec: true}, text)
	assert.False(t, data.Exec)
	for _, c := range []struct {
		segs []Segment
		off  uint64
		want uint64
		ok   bool
	}{
		{[]Segment{text, data}, 0x1000, 0x401000, true},
		{[]Segment{text, data}, 0x20ff, 0x4020ff, true},
		{[]Segment{text, data}, 0x2100, 0x403100, true}, // past text's bytes: data's
		{[]Segment{text, data}, 0x2300, 0, false},       // past every segment's bytes
		{[]Segment{text, data}, 0xfff, 0, false},
		{nil, 0x1000, 0, false},
	} {
		got, ok := Addr(c.segs, c.off)
		assert.Equal(t, c.ok, ok, "%#x", c.off)
		assert.Equal(t, c.want, got, "%#x", c.off)
	}
}
