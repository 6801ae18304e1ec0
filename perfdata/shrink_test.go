package perfdata

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileShrinksWhileRead: a recording cut short on disk while it is being
// read (rewritten by a new perf record, rotated) ends in an error at the
// offset reached, also when the cut falls between two records, where the
// input would otherwise just end early and cleanly. The file is a real
// copy of a fixture, truncated with os.Truncate after Open; the fixture is
// larger than the first 256 KiB read, so the cut lies in what is still to
// be read in file order (with and without SampleHeadersOnly; time order
// reads 1 MiB chunks, and would have read this file whole already).
func TestFileShrinksWhileRead(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "cshared-dwarf.data")
	sigs, f := recordOffsets(t, b)
	off, size := f.DataRange()
	// The first record boundary past the first read (256 KiB + 8 bytes)
	// and before the end of the data.
	var cut int64 = -1
	for _, s := range sigs {
		if !s.cmp && s.off > off+readChunk+8 && s.off < off+size {
			cut = s.off
			break
		}
	}
	if cut < 0 {
		t.Fatalf("no record starts between %d and %d: the fixture no longer spans two reads", off+readChunk+8, off+size)
	}
	for _, opts := range []RecordsOptions{{}, {SampleHeadersOnly: true}} {
		path := filepath.Join(t.TempDir(), "perf.data")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rs := pf.Records(opts)
		if !rs.Next() {
			t.Fatalf("%+v: no first record: %v", opts, rs.Err())
		}
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		n := 1
		for rs.Next() {
			n++
		}
		pf.Close()
		err = rs.Err()
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, io.ErrUnexpectedEOF) || fe.Offset != cut || !strings.Contains(err.Error(), "shrank") {
			t.Errorf("%+v: file cut at %d while read: %d records, error %v; want a FormatError at %d saying it shrank", opts, cut, n, err, cut)
		}
	}
}
