package buildidcache

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"testing"
)

// realBuildIDNotes returns the .note.gnu.build-id section of real binaries
// (this test's executable, linked by Go, and a system one linked by ld)
// with the build-id readelf prints for each, keyed by file.
func realBuildIDNotes(t *testing.T) map[string][]byte {
	t.Helper()
	files := []string{}
	if exe, err := os.Executable(); err == nil {
		files = append(files, exe)
	}
	if ls, err := exec.LookPath("ls"); err == nil {
		files = append(files, ls)
	}
	notes := map[string][]byte{}
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := f.Section(".note.gnu.build-id")
		if s == nil {
			f.Close()
			continue
		}
		b, err := s.Data()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		notes[p] = b
	}
	if len(notes) == 0 {
		t.Skip("no binary with a .note.gnu.build-id section here")
	}
	return notes
}

// BuildIDFromNotes reads the build-id readelf reads from real note
// sections, in either byte order, and /sys/kernel/notes (several notes, the
// build-id among them) as KernelBuildID, which TestKernelBuildID checks
// against perf.
func TestBuildIDFromNotes(t *testing.T) {
	t.Parallel()
	for p, b := range realBuildIDNotes(t) {
		want := readelfID(t, p)
		id, err := BuildIDFromNotes(b, binary.LittleEndian)
		if err != nil || id.String() != want {
			t.Errorf("%s: BuildIDFromNotes = %v, %v; readelf says %s", p, id, err, want)
		}
		// The same note written big-endian (only the three header words
		// have a byte order), as on s390x or a big-endian PowerPC.
		be := bytes.Clone(b)
		for i := 0; i < 12; i += 4 {
			binary.BigEndian.PutUint32(be[i:], binary.LittleEndian.Uint32(b[i:]))
		}
		if id, err := BuildIDFromNotes(be, binary.BigEndian); err != nil || id.String() != want {
			t.Errorf("%s big-endian: BuildIDFromNotes = %v, %v; want %s", p, id, err, want)
		}
		// The result is a copy: the caller's buffer may be reused.
		id, _ = BuildIDFromNotes(b, binary.LittleEndian)
		clear(b)
		if id.String() != want {
			t.Errorf("%s: the build-id changed with the buffer it came from: %v", p, id)
		}
	}
	kn, err := os.ReadFile(kernelNotesPath)
	if err != nil {
		t.Logf("%s not readable (%v): kernel notes not checked", kernelNotesPath, err)
		return
	}
	kid, kerr := KernelBuildID()
	id, err := BuildIDFromNotes(kn, binary.NativeEndian)
	if (err == nil) != (kerr == nil) || !bytes.Equal(id, kid) {
		t.Errorf("%s: BuildIDFromNotes = %v, %v; KernelBuildID = %v, %v", kernelNotesPath, id, err, kid, kerr)
	}
}

// Notes other than a GNU build-id are stepped over, the first build-id
// wins, and their absence is ErrNoBuildID.
func TestBuildIDFromNotesChoice(t *testing.T) {
	t.Parallel()
	first, second := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{9, 8, 7, 6, 5, 4, 3, 2, 1}
	abi := elfNote("GNU\x00", 1, []byte{0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}) // NT_GNU_ABI_TAG
	goID := elfNote("Go\x00\x00", ntGoBuildID, []byte("abc/def"))
	notGNU := elfNote("XEN\x00", ntGNUBuildID, []byte{7, 7, 7, 7}) // type 3, another owner
	b := bytes.Join([][]byte{abi, goID, notGNU, elfNote("GNU\x00", ntGNUBuildID, first), elfNote("GNU\x00", ntGNUBuildID, second)}, nil)
	if id, err := BuildIDFromNotes(b, binary.LittleEndian); err != nil || !bytes.Equal(id, first) {
		t.Errorf("BuildIDFromNotes = %v, %v; want %x", id, err, first)
	}
	for _, b := range [][]byte{nil, {}, bytes.Join([][]byte{abi, goID, notGNU}, nil), make([]byte, 11)} {
		if id, err := BuildIDFromNotes(b, binary.LittleEndian); !errors.Is(err, ErrNoBuildID) || id != nil {
			t.Errorf("%d bytes without a build-id: %v, %v; want ErrNoBuildID", len(b), id, err)
		}
	}
}

// Malformed notes give a *FormatError at the offending note's offset,
// never a panic nor a build-id.
func TestBuildIDFromNotesMalformed(t *testing.T) {
	t.Parallel()
	prefix := elfNote("Go\x00\x00", ntGoBuildID, []byte("abc/def")) // a good note first: offsets are not 0
	at := int64(len(prefix))
	huge := make([]byte, 12)
	binary.LittleEndian.PutUint32(huge, 0xffffffff)
	binary.LittleEndian.PutUint32(huge[4:], 0xffffffff)
	binary.LittleEndian.PutUint32(huge[8:], ntGNUBuildID)
	for _, c := range []struct {
		name  string
		note  []byte
		trunc bool // the error wraps io.ErrUnexpectedEOF
	}{
		{"empty build-id", elfNote("GNU\x00", ntGNUBuildID, nil), false},
		{"build-id longer than 1024 bytes", elfNote("GNU\x00", ntGNUBuildID, make([]byte, 1025)), false},
		{"sizes of 4 GiB", huge, true},
		{"name past the end", elfNote("GNU\x00", ntGNUBuildID, []byte{1, 2, 3, 4})[:14], true},
		{"build-id past the end", elfNote("GNU\x00", ntGNUBuildID, make([]byte, 20))[:30], true},
	} {
		id, err := BuildIDFromNotes(append(bytes.Clone(prefix), c.note...), binary.LittleEndian)
		var fe *FormatError
		if id != nil || !errors.As(err, &fe) || fe.Offset != at || errors.Is(err, io.ErrUnexpectedEOF) != c.trunc {
			t.Errorf("%s: %v, %v; want a *FormatError at offset %d (truncation: %v)", c.name, id, err, at, c.trunc)
		}
	}
}

// Every cut of a real note and random bytes: an answer or an error, never
// both, never a panic; a cut note is never read as a shorter build-id.
func TestBuildIDFromNotesGarbage(t *testing.T) {
	t.Parallel()
	for p, b := range realBuildIDNotes(t) {
		for n := 0; n < len(b); n++ {
			id, err := BuildIDFromNotes(b[:n], binary.LittleEndian)
			if id != nil {
				t.Errorf("%s cut at %d: build-id %v", p, n, id)
			}
			var fe *FormatError
			if !errors.Is(err, ErrNoBuildID) && !(errors.As(err, &fe) && errors.Is(err, io.ErrUnexpectedEOF)) {
				t.Errorf("%s cut at %d: %v, want ErrNoBuildID or a truncation", p, n, err)
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(64))
		rng.Read(b)
		if i%2 == 0 && len(b) >= 12 {
			// Plausible headers, so that the loop goes past the first note.
			binary.LittleEndian.PutUint32(b, uint32(rng.Intn(8)))
			binary.LittleEndian.PutUint32(b[4:], uint32(rng.Intn(32)))
			binary.LittleEndian.PutUint32(b[8:], uint32(rng.Intn(5)))
		}
		checkNotesInvariant(t, b)
	}
}

func checkNotesInvariant(t *testing.T, b []byte) {
	id, err := BuildIDFromNotes(b, binary.LittleEndian)
	if (err == nil) == (id == nil) || (id != nil && (len(id) == 0 || len(id) > len(b))) {
		t.Fatalf("% x: %v, %v", b, id, err)
	}
}

func FuzzBuildIDFromNotes(f *testing.F) {
	f.Add(elfNote("GNU\x00", ntGNUBuildID, []byte{1, 2, 3, 4}))
	f.Add(append(elfNote("Go\x00\x00", ntGoBuildID, []byte("a/b")), elfNote("GNU\x00", ntGNUBuildID, make([]byte, 20))...))
	if b, err := os.ReadFile(kernelNotesPath); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkNotesInvariant(t, b) })
}
