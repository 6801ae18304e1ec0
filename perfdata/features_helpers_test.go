package perfdata

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// corpusDir is the shared corpus of real recordings (see its README); it
// may be absent: fixtures.Corpus(t, "") skips a test that needs it.
var corpusDir = fixtures.CorpusDir()

// testFeatures builds the Features of a recording without the core reader,
// so that feature decoding is tested on its own: for file mode it reads
// the perf_file_header and the section table at data.offset+data.size
// (perf_header__process_sections); for pipe mode it walks the records and
// feeds HEADER_FEATURE (80) and HEADER_BUILD_ID (67) records in, stepping
// over the payloads that follow records 66 and 71. Only little-endian
// recordings are in the corpus.
func testFeatures(t testing.TB, path string) *Features {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := featuresOf(b)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return fs
}

func featuresOf(b []byte) (*Features, error) {
	le := binary.LittleEndian
	if len(b) < 16 || string(b[:8]) != "PERFILE2" {
		return nil, &FormatError{Msg: "not a little-endian PERFILE2 file"}
	}
	if le.Uint64(b[8:]) == 16 {
		fs := newPipeFeatures(le)
		off := 16
		for off+8 <= len(b) {
			typ := le.Uint32(b[off:])
			size := int(le.Uint16(b[off+6:]))
			if size < 8 || off+size > len(b) {
				break
			}
			rec := b[off : off+size]
			switch typ {
			case 80:
				if size >= 16 {
					fs.addPipe(Feature(le.Uint64(rec[8:])), rec[16:], int64(off+16))
				}
			case 67:
				d := newDecoder(rec, int64(off), le, "HEADER_BUILD_ID record")
				e := decodeBuildIDEvent(&d)
				if d.err != nil {
					return nil, d.err
				}
				fs.addBuildID(e)
			case 66:
				if size >= 12 {
					off += int(le.Uint32(rec[8:]))
				}
			case 71:
				if size >= 16 {
					off += int(le.Uint64(rec[8:]))
				}
			}
			off += size
		}
		return fs, nil
	}
	if len(b) < 104 {
		return nil, &FormatError{Msg: "short header"}
	}
	dataOff := le.Uint64(b[40:])
	dataSize := le.Uint64(b[48:])
	tab := dataOff + dataSize
	var secs []featureSection
	n := 0
	for bit := 1; bit < featureBits; bit++ {
		if b[72+bit/8]&(1<<(bit%8)) == 0 {
			continue
		}
		at := tab + uint64(16*n)
		n++
		if at+16 > uint64(len(b)) {
			return nil, &FormatError{Offset: int64(at), Msg: "feature table beyond the file"}
		}
		secs = append(secs, featureSection{ID: Feature(bit), Offset: int64(le.Uint64(b[at:])), Size: int64(le.Uint64(b[at+8:]))})
	}
	_ = bits.OnesCount
	return newFileFeatures(bytes.NewReader(b), int64(len(b)), le, secs), nil
}
