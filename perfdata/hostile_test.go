package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestAttrIDsQuadratic: every attr of a file can name an ids range, and
// each range alone fits the file; a file whose attrs all name the whole
// file made the reader keep (and index) the file's size in ids once per
// attr — memory growing with the square of the input. No real recording
// has overlapping id ranges (none of ../shared/corpus, none of the
// fixtures), so ids beyond the file's size in all are an error, found
// before they are read.
//
// The hostile file is built here from the real twoevents.data: its attrs
// section is moved to the end of the file and replaced by 64 copies of its
// first attr, each with ids {offset 0, size: the whole file}.
func TestAttrIDsQuadratic(t *testing.T) {
	b := readFixture(t, "twoevents.data")
	o := binary.LittleEndian
	attrSize := int64(o.Uint64(b[16:]))
	attrsOff := int64(o.Uint64(b[24:]))
	const copies = 64
	newOff := int64(len(b))
	size := newOff + copies*attrSize
	c := bytes.Clone(b)
	entry := b[attrsOff : attrsOff+attrSize]
	for range copies {
		e := bytes.Clone(entry)
		o.PutUint64(e[attrSize-16:], 0)
		o.PutUint64(e[attrSize-8:], uint64(size))
		c = append(c, e...)
	}
	o.PutUint64(c[24:], uint64(newOff))
	o.PutUint64(c[32:], uint64(copies*attrSize))

	var f *File
	var err error
	grew := allocated(func() {
		f, err = NewFile(bytes.NewReader(c), int64(len(c)))
	})
	// Reading one attr's ids costs a read buffer, the ids and their
	// index: a few times the file, never once per attr.
	t.Logf("%d-byte file: %d bytes allocated", len(c), grew)
	if grew > 16*uint64(len(c)) {
		t.Errorf("a %d-byte file made NewFile allocate %d bytes (%.0f times its size)", len(c), grew, float64(grew)/float64(len(c)))
	}
	if f != nil || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got a File: %v, error %v; want an ErrMalformed", f != nil, err)
	}
	// The second attr's ids are the first to exceed the file.
	wantErrAt(t, err, newOff+attrSize, ErrMalformed, "ids")
	t.Log(err)

	// The real layout, with its ids apart, still reads.
	if _, err := NewFile(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// TestStreamPrefixGrowsWithInput: a file-format stream buffers what
// precedes its data section; a stream of a few hundred bytes that claims
// its data starts 60 MiB in must fail where it ends, having allocated
// about what it sent, not the 60 MiB it claims. Built from the real
// twoevents.data: its header and attrs, with the data offset rewritten.
func TestStreamPrefixGrowsWithInput(t *testing.T) {
	b := readFixture(t, "twoevents.data")
	o := binary.LittleEndian
	dataOff := o.Uint64(b[40:])
	const claim = 60 << 20
	for _, sent := range []int{fileHeaderSize, int(dataOff), 300 << 10} {
		c := make([]byte, sent)
		copy(c, b)
		o.PutUint64(c[40:], claim)
		var err error
		grew := allocated(func() {
			_, err = NewReader(bytes.NewReader(c))
		})
		t.Logf("%d bytes sent: %d allocated", sent, grew)
		if grew > 4*uint64(sent)+1<<20 {
			t.Errorf("%d bytes sent: %d bytes allocated", sent, grew)
		}
		wantErrAt(t, err, int64(sent), io.ErrUnexpectedEOF, fmt.Sprintf("before its data section at %d", claim))
	}
}
