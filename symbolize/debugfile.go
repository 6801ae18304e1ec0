package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/regfile"
	"github.com/perfcheck/perfcheck/internal/xz"
)

// parseDebugLink decodes a .gnu_debuglink section: a NUL-terminated file
// name, padding to 4 bytes, then the CRC-32 of the debug file.
func parseDebugLink(d []byte, bo binary.ByteOrder) (string, uint32) {
	i := bytes.IndexByte(d, 0)
	if i <= 0 {
		return "", 0
	}
	name := string(d[:i])
	off := (i + 1 + 3) &^ 3
	if off+4 > len(d) {
		return name, 0
	}
	return name, bo.Uint32(d[off:])
}

// defaultDebugLookup finds separate debug files when Options.DebugFile is
// nil: buildidcache's debug-directory layout over its default directory,
// /usr/lib/debug, without perf's cache or a debuginfod server.
var defaultDebugLookup = sync.OnceValue(func() *buildidcache.Resolver {
	return buildidcache.New(buildidcache.Options{BuildIDDir: "-", DebuginfodURLs: []string{}})
})

// defaultDebugFile is the locator Options.DebugFile defaults to.
func defaultDebugFile(q DebugQuery) (string, error) {
	return defaultDebugLookup().DebugFile(q.Path, q.BuildID, q.DebugLink)
}

// hasDWARF reports whether ef carries DWARF line or info data of its own
// (an --only-keep-debug file or an unstripped binary), not NOBITS
// placeholders.
func hasDWARF(ef *elf.File) bool {
	for _, name := range []string{".debug_info", ".zdebug_info"} {
		if s := ef.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return true
		}
	}
	return false
}

// openDebugFile asks the locator for the separate debug file and checks it
// belongs to b: same build-id when both have one, else the debuglink CRC.
// Its compressed sections that debug/elf may decompress are reserved from
// the run's budget until b is closed (admit).
func (b *Binary) openDebugFile() (_ *os.File, _ *elf.File, _ string, err error) {
	if b.opts.NoDebugFile || (len(b.buildID) == 0 && b.debugLink == "") {
		return nil, nil, "", nil
	}
	loc := b.opts.DebugFile
	if loc == nil {
		loc = defaultDebugFile
	}
	p, err := loc(DebugQuery{Path: b.path, BuildID: b.buildID, DebugLink: b.debugLink, DebugLinkCRC: b.linkCRC})
	if err != nil {
		if errors.Is(err, buildidcache.ErrNotFound) {
			return nil, nil, "", nil
		}
		return nil, nil, "", err
	}
	// The locator's stat came before this open: open non-blocking and
	// check the descriptor, so a FIFO swapped in since cannot block.
	f, err := regfile.Open(p)
	if err != nil {
		return nil, nil, "", err
	}
	var ef *elf.File
	err = safely(func() error {
		var err error
		ef, err = elf.NewFile(f)
		return err
	})
	if err != nil {
		f.Close()
		return nil, nil, "", fmt.Errorf("debug file %s: %w", p, err)
	}
	n, err := b.admit("debug file "+p, f, ef)
	if err != nil {
		f.Close()
		return nil, nil, "", err
	}
	defer func() {
		if err != nil {
			b.bud.Release(n)
		} else {
			b.held.Add(n)
		}
	}()
	if id := elfBuildID(ef); len(b.buildID) > 0 && len(id) > 0 {
		if !bytes.Equal(id, b.buildID) {
			f.Close()
			return nil, nil, "", fmt.Errorf("debug file %s has build-id %s, %s has %s", p, id, b.path, b.buildID)
		}
	} else if len(b.buildID) > 0 && b.debugLink == "" {
		// Found by the binary's build-id, it must carry it: objcopy
		// --only-keep-debug keeps the note, and with no debuglink CRC
		// nothing else would tie the file to the binary.
		f.Close()
		return nil, nil, "", fmt.Errorf("debug file %s has no build-id, %s has %s", p, b.path, b.buildID)
	} else if b.debugLink != "" {
		h := crc32.NewIEEE()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
			f.Close()
			return nil, nil, "", err
		}
		if h.Sum32() != b.linkCRC {
			f.Close()
			return nil, nil, "", fmt.Errorf("debug file %s: CRC %08x, debuglink of %s wants %08x", p, h.Sum32(), b.path, b.linkCRC)
		}
	}
	return f, ef, p, nil
}

// maxMiniDebugInfo bounds the decompressed MiniDebugInfo: xz rarely
// compresses a symbol table more than 20-fold, and 256 MiB is far beyond
// any real one.
const maxMiniDebugInfo = 256 << 20

// miniDebugInfo decompresses .gnu_debugdata (Fedora/RHEL MiniDebugInfo, an
// xz-compressed ELF holding a .symtab of the functions .dynsym lacks) and
// returns it, nil when absent, with what it holds of the run's budget,
// for the caller to release when done with it. The size the stream's
// indexes declare, and the dictionary that needs (internal/xz), are
// checked and reserved before anything is decompressed; the blocks'
// dictionaries are capped at that size whatever they declare.
func (b *Binary) miniDebugInfo() (mini *elf.File, cost int64, err error) {
	s := b.ef.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, 0, nil
	}
	where := fmt.Sprintf("section .gnu_debugdata at offset %#x", s.Offset)
	fail := func(err error) (*elf.File, int64, error) {
		b.bud.Release(cost)
		return nil, 0, named(b.path+": "+where, err)
	}
	comp, err := sectionData(s)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrMalformed, err))
	}
	sz, err := xz.Measure(comp)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrMalformed, err))
	}
	limit := min(max(int64(len(comp))*50, 1<<20), maxMiniDebugInfo)
	if sz.Data > limit {
		return fail(fmt.Errorf("%w: declares %d bytes from %d compressed, beyond %d", ErrMalformed, sz.Data, len(comp), limit))
	}
	if err := b.bud.Reserve(sz.Data+sz.Dict, b.path, where); err != nil {
		return fail(err)
	}
	cost = sz.Data + sz.Dict
	zr := xz.NewReader(bytes.NewReader(comp), sz.Data)
	data, err := readSized(zr, uint64(sz.Data), uint64(sz.Data))
	if err == nil {
		// The xz reader verifies the checks and the index at the end;
		// a block that goes on past what the index declares is an
		// error, not more data.
		var one [1]byte
		if n, rerr := zr.Read(one[:]); n > 0 {
			err = fmt.Errorf("decompresses to more than the %d bytes its index declares", sz.Data)
		} else if rerr != io.EOF {
			err = rerr
		}
	}
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrMalformed, err))
	}
	err = safely(func() error {
		var err error
		if mini, err = elf.NewFile(bytes.NewReader(data)); err != nil {
			return err
		}
		// Its own compressed sections, which debug/elf decompresses
		// when mini's symbols are read.
		n, err := reserveCompressed(mini, bytes.NewReader(data), account{b.bud, b.path + " (" + where + ")"}, func(*elf.Section) bool { return true })
		cost += n
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("the %d bytes it decompresses to: %w", len(data), malformed(err)))
	}
	return mini, cost, nil
}
