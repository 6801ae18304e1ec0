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
	"github.com/ulikunitz/xz"
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
func (b *Binary) openDebugFile() (*os.File, *elf.File, string, error) {
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
// returns it, nil when absent.
func (b *Binary) miniDebugInfo() (*elf.File, error) {
	s := b.ef.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	comp, err := sectionData(s)
	if err != nil {
		return nil, fmt.Errorf("%s: .gnu_debugdata at offset %#x: %w: %w", b.path, s.Offset, ErrMalformed, err)
	}
	zr, err := xz.NewReader(bytes.NewReader(comp))
	if err != nil {
		return nil, fmt.Errorf("%s: .gnu_debugdata at offset %#x: %w: %w", b.path, s.Offset, ErrMalformed, err)
	}
	limit := int64(len(comp)) * 50
	limit = min(max(limit, 1<<20), maxMiniDebugInfo)
	data, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: .gnu_debugdata at offset %#x: %w: %w", b.path, s.Offset, ErrMalformed, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: .gnu_debugdata at offset %#x: %w: decompresses beyond %d bytes", b.path, s.Offset, ErrMalformed, limit)
	}
	var mini *elf.File
	err = safely(func() error {
		var err error
		mini, err = elf.NewFile(bytes.NewReader(data))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: .gnu_debugdata: %w", b.path, malformed(err))
	}
	return mini, nil
}
