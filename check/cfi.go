package check

import (
	"debug/elf"
	"fmt"
	"io"

	"github.com/perfcheck/perfcheck/buildid"
	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/safeelf"
	"github.com/perfcheck/perfcheck/unwind"
)

// readCFI reads the unwind tables of the ELF file at path, which must
// carry build-id want when want is not nil (readELF).
func readCFI(path string, want buildid.ID) (t *unwind.Table, err error) {
	err = readELF(path, want, func(ef *elf.File) error {
		t, err = unwind.NewTable(ef)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// readELF opens the regular file at path, checks that it carries build-id
// want when want is not nil, reads its ELF headers and calls fn. The
// build-id is checked on the open file whose tables fn reads: the file at
// a path the locator verified can change before it is opened again.
// debug/elf may panic on malformed input; that becomes an error naming the
// file.
func readELF(path string, want buildid.ID, fn func(ef *elf.File) error) (err error) {
	f, err := buildidcache.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if len(want) > 0 {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := checkBuildID(path, f, st.Size(), want); err != nil {
			return err
		}
	}
	defer safeelf.Recover(path, &err)
	ef, err := elf.NewFile(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return fn(ef)
}

// checkBuildID reports an error unless the ELF image r (of size bytes),
// read from path, carries build-id want: the file at a path the locator
// verified can change before it is opened again, so the build-id is
// checked on the bytes that are then read.
func checkBuildID(path string, r io.ReaderAt, size int64, want buildid.ID) error {
	id, err := imageBuildID(path, r, size)
	if err != nil {
		return err
	}
	return wantBuildID(path, id, want)
}

// imageBuildID reads the build-id of the ELF image r (of size bytes), read
// from path; nil when it has none.
func imageBuildID(path string, r io.ReaderAt, size int64) (buildid.ID, error) {
	ident, err := buildidcache.ReadIdentity(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(ident.BuildID) == 0 {
		return nil, nil
	}
	return ident.BuildID, nil
}

// wantBuildID reports a *changedError unless id, the build-id read from
// the file at path once open, is want (or its zero-padded form).
func wantBuildID(path string, id, want buildid.ID) error {
	if len(id) == 0 || !id.Matches(want) {
		return &changedError{path: path, got: id, want: want}
	}
	return nil
}

// changedError means a file opened to be read is not the one a verdict
// (or the lookup before it) examined at the same path: its build-id is got,
// not want (nil: none).
type changedError struct {
	path      string
	got, want buildid.ID
}

func (e *changedError) Error() string {
	switch {
	case len(e.want) == 0:
		return fmt.Sprintf("%s: build-id %s, none when its verdict was given: the file changed since", e.path, e.got)
	case len(e.got) == 0:
		return fmt.Sprintf("%s: no build-id, not %s: the file changed since it was found", e.path, e.want)
	}
	return fmt.Sprintf("%s: build-id %s, not %s: the file changed since it was found", e.path, e.got, e.want)
}

// elfLoads lists ef's PT_LOAD segments whose executable flag is exec.
func elfLoads(ef *elf.File, exec bool) []load {
	var loads []load
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && (p.Flags&elf.PF_X != 0) == exec {
			loads = append(loads, load{off: p.Off, filesz: p.Filesz, vaddr: p.Vaddr})
		}
	}
	return loads
}
