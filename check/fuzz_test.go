package check

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/buildidcache"
	"github.com/perfcheck/perfcheck/internal/budget"
	"github.com/perfcheck/perfcheck/internal/fixtures"
	"github.com/perfcheck/perfcheck/perfdata"
)

// FuzzSession drives a session with arbitrary events decoded from the
// input: whatever the values (wrapping ranges, zero lengths, markers in odd
// places, unknown pids), nothing panics and the counts add up.
func FuzzSession(f *testing.F) {
	f.Add([]byte("\x00\x01\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x03\x05\x00\x00\x10\x10\x00\x00\x00\x00\x00\x00"))
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newTestSession(t, Options{NoSymbols: true, JITMapDir: t.TempDir()})
		u64 := func() uint64 {
			if len(b) < 8 {
				b = nil
				return 0
			}
			v := binary.LittleEndian.Uint64(b)
			b = b[8:]
			return v
		}
		paths := []string{"/nonexistent/a", "//anon", "[vdso]", "[kernel.kallsyms]_text", "[heap]", "", "/nonexistent/b.ko"}
		for len(b) > 2 {
			op, arg := b[0], b[1]
			b = b[2:]
			pid := int32(arg%4) - 1
			switch op % 6 {
			case 0:
				var misc uint16
				if arg&0x80 != 0 {
					misc = miscMmapData
				}
				h := recHeader(perfdata.RecordMmap, perfdata.CPUMode(arg%6), misc)
				start, length, pgoff, path := u64(), u64(), u64(), paths[int(arg)%len(paths)]
				if arg&0x40 != 0 {
					h.RecType = perfdata.RecordMmap2
					s.update(&perfdata.Mmap2{RecordHeader: h, PID: uint32(pid), TID: uint32(pid),
						Addr: start, Len: length, PgOff: pgoff, Filename: path, Ino: uint64(arg)})
				} else {
					s.update(&perfdata.Mmap{RecordHeader: h, PID: uint32(pid), TID: uint32(pid),
						Addr: start, Len: length, PgOff: pgoff, Filename: path})
				}
			case 1:
				s.update(forkRec(pid, int32(arg%3), pid, 0))
			case 2:
				s.update(commRec(pid, pid, "c", arg&1 == 1))
			case 3:
				s.update(&perfdata.Exit{RecordHeader: recHeader(perfdata.RecordExit, perfdata.CPUModeUser, 0),
					PID: uint32(pid), TID: uint32(pid)})
			default:
				n := int(arg % 8)
				chain := make([]uint64, 0, n)
				for i := 0; i < n; i++ {
					chain = append(chain, u64())
				}
				s.sample(&sampleEvent{PID: uint32(pid), TID: uint32(pid), Mode: perfdata.CPUMode(arg % 6), IP: u64(), Period: 1, Callchain: chain})
			}
		}
		res, err := s.finish(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.TrustedSamples+res.UntrustedAnySamples != res.Samples || res.UntrustedLeafSamples > res.UntrustedAnySamples {
			t.Fatalf("counts: %s", res.Report().Summary())
		}
		var sum uint64
		for _, a := range res.Aggregates() {
			sum += a.Samples
			if len(a.Stack.Locations()) == 0 {
				t.Fatal("empty stack")
			}
		}
		if sum != res.Samples {
			t.Fatalf("aggregates hold %d samples, want %d", sum, res.Samples)
		}
	})
}

// FuzzRecordingBinary analyzes a real recording, testdata's
// cshared-fp.data, with the library it names, libhot.so, replaced by the
// input under --symfs (its executable, cshared, as built; nothing else
// there, so that the system's libraries cost nothing): the identity reader,
// the lookup and the symbolizer of every location see a binary that a
// recording names. Seeds: libhot.so, and its hostile variants of
// docs/limits.md (internal/fixtures). Whatever the bytes, Analyze ends with a result or an
// error, never a panic, and the run's decompression budget holds nothing
// once Analyze has returned.
func FuzzRecordingBinary(f *testing.F) {
	bin := filepath.Join(fixtures.Dir(), "bin")
	hot, err := os.ReadFile(filepath.Join(bin, "libhot.so"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(hot)
	f.Add(fixtures.LineTableCounts(f, hot, 1<<44, 0))
	f.Add(fixtures.ELFWithSection(f, hot, ".gnu_debugdata", elf.SHT_PROGBITS, 0, fixtures.XZDictBomb(f, 2)))
	rec := filepath.Join(fixtures.Dir(), "cshared-fp.data")
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, fixtures.RecordedBin)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(bin, "cshared"), filepath.Join(dir, "cshared")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "libhot.so"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		bud := budget.Default()
		before := bud.Used()
		empty := t.TempDir()
		res, err := Analyze(context.Background(), Path(rec), Options{Lookup: buildidcache.Options{
			SymFS: root, BuildIDDir: empty, DebugDirs: []string{empty}, DebuginfodURLs: []string{}, DebuginfodCache: empty}})
		if err != nil {
			return
		}
		res.Report()
		if used := bud.Used(); used != before {
			t.Fatalf("the budget holds %d bytes after the run, %d before", used, before)
		}
	})
}
