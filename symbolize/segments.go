package symbolize

import (
	"debug/elf"
	"fmt"
	"io"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/elfload"
)

// Segment is a PT_LOAD segment of an ELF file: Filesz bytes at file offset
// Off, loaded at address Vaddr; Exec when it is executable (PF_X). It is
// the unwinder's type too, which may not depend on this package.
type Segment = elfload.Segment

// Segments returns the PT_LOAD segments of the ELF file the binary was
// opened from, in program-header order, as read from that open file; nil
// for a symbol list.
func (b *Binary) Segments() []Segment {
	return segments(b.loads)
}

func segments(loads []elf.ProgHeader) []Segment {
	var out []Segment
	for _, p := range loads {
		out = append(out, elfload.Of(&p))
	}
	return out
}

// ReadSegments reads the PT_LOAD segments of the ELF file at path, in
// program-header order, without opening it as a Binary: the program
// headers of a file with the same code stand in for those of a separate
// debug file, whose segments hold no bytes. Only a regular file is opened,
// without blocking. When want is not nil the file must carry that
// build-id, checked on the open file whose headers are read (else an
// error wrapping a *buildidcache.MismatchError).
func ReadSegments(path string, want buildid.ID) ([]Segment, error) {
	f, err := buildidcache.OpenVerified(path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var loads []elf.ProgHeader
	err = safely(func() error {
		ef, err := elf.NewFile(io.NewSectionReader(f, 0, 1<<62))
		if err != nil {
			return err
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				loads = append(loads, p.ProgHeader)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, malformed(err))
	}
	return segments(loads), nil
}
