// Command readfloor reads a file to its end in 1 MiB reads and does nothing
// else: the least time any Go program reading the file (not mapping it;
// docs/perfdata.md says why perfcheck reads) can take, its own start-up
// included. bench/run.sh compares it with the time budget of a speed goal,
// to tell a goal perfcheck misses from one no reader can meet on that file.
//
// With -z it also decompresses the zstd data of the file's COMPRESSED and
// COMPRESSED2 records (perf record -z), which every reader of the records
// must do: the floor of such a recording is reading plus decompressing.
// It walks the data section's record headers to find them and decodes
// nothing else. The data is decompressed as perf's own reader does, as one
// stream fed record after record, by one streaming decoder of the zstd
// library perfdata uses, in its cheapest use: synchronous (perf's reader
// decompresses in the thread that reads) and writing its output to
// io.Discard, so that not even a copy of the decompressed bytes is made.
//
// With -ordered it reads the file as a perf.data recording, every record
// decoded and delivered in perf's time order (perfdata's ordered reading),
// and does nothing with them: the floor of a command that must see the
// samples in time order, as check does, however its own work is spread
// over the cores.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/perfcheck/perfcheck/perfdata"
)

func main() {
	decompress := flag.Bool("z", false, "also decompress the zstd data of the perf.data file's compressed records")
	ordered := flag.Bool("ordered", false, "read the records in time order with perfdata")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: readfloor [-z | -ordered] FILE") }
	flag.Parse()
	if flag.NArg() != 1 || *decompress && *ordered {
		flag.Usage()
		os.Exit(2)
	}
	if *ordered {
		n, err := readOrdered(flag.Arg(0))
		if err != nil {
			fail(err)
		}
		fmt.Println(n)
		return
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	w := &walker{f: f, buf: make([]byte, 1<<20)}
	if !*decompress {
		if err := w.drain(); err != nil {
			fail(err)
		}
		fmt.Println(w.read)
		return
	}
	out, err := w.decompress()
	if err == nil {
		err = w.drain()
	}
	if err != nil {
		fail(fmt.Errorf("%s: %w", flag.Arg(0), err))
	}
	fmt.Printf("%d bytes read, %d compressed records, %d bytes decompressed\n", w.read, w.compressed, out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// Record types and the offset of a perf.data header's data section.
const (
	recordTracingData = 66
	recordAuxtrace    = 71
	recordCompressed  = 81
	recordCompressed2 = 83

	pipeHeaderSize = 16
	fileHeaderSize = 56 // up to the data section's offset and size
)

// walker reads the file in 1 MiB reads and walks its records. As the zstd
// decoder's input (Read) it hands over the zstd data of one compressed
// record after another.
type walker struct {
	f          *os.File
	buf        []byte
	start, end int   // buf[start:end] is read and not yet used
	pos        int64 // the file offset of buf[start]
	read       int64 // bytes read from the file
	eof        bool

	order      binary.ByteOrder
	dataEnd    int64
	pipe       bool
	cur        []byte // the rest of the current compressed record's data
	compressed int
	done       bool // the records ended cleanly
}

// fill makes buf[start:end] hold at least n bytes; false at the file's end.
func (w *walker) fill(n int) (bool, error) {
	if w.end-w.start >= n {
		return true, nil
	}
	if n > len(w.buf) {
		w.buf = append(w.buf, make([]byte, n-len(w.buf))...)
	}
	if len(w.buf)-w.start < n {
		copy(w.buf, w.buf[w.start:w.end])
		w.end -= w.start
		w.start = 0
	}
	for w.end-w.start < n && !w.eof {
		// A loop of its own: io.Copy to io.Discard would read in
		// io.Discard's 8 KiB blocks whatever buffer it is given.
		k, err := w.f.Read(w.buf[w.end:])
		w.end += k
		w.read += int64(k)
		if err == io.EOF {
			w.eof = true
		} else if err != nil {
			return false, err
		}
	}
	return w.end-w.start >= n, nil
}

// skip moves n bytes on, reading through what is not in buf.
func (w *walker) skip(n int64) error {
	for n > 0 {
		if w.start == w.end {
			w.start, w.end = 0, 0
			if ok, err := w.fill(1); !ok {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("offset %d: %w", w.pos, err)
			}
		}
		k := min(n, int64(w.end-w.start))
		w.start += int(k)
		w.pos += k
		n -= k
	}
	return nil
}

// drain reads the rest of the file.
func (w *walker) drain() error {
	w.start, w.end = 0, 0
	for !w.eof {
		if _, err := w.fill(len(w.buf)); err != nil {
			return err
		}
		w.start, w.end = 0, 0
	}
	return nil
}

// header finds the data section: in file mode the header gives it, in
// pipe mode the records follow the 16-byte header to the end.
func (w *walker) header() error {
	if ok, err := w.fill(pipeHeaderSize); !ok {
		return fmt.Errorf("too short for a perf.data header (%v)", err)
	}
	switch string(w.buf[:8]) {
	case "PERFILE2":
		w.order = binary.LittleEndian
	case "2ELIFREP":
		w.order = binary.BigEndian
	default:
		return errors.New("not a perf.data file: no PERFILE2 magic")
	}
	if w.order.Uint64(w.buf[8:]) == pipeHeaderSize {
		w.dataEnd, w.pipe = 1<<63-1, true
		return w.skip(pipeHeaderSize)
	}
	if ok, err := w.fill(fileHeaderSize); !ok {
		return fmt.Errorf("too short for a perf.data header (%v)", err)
	}
	off, size := w.order.Uint64(w.buf[40:]), w.order.Uint64(w.buf[48:])
	w.dataEnd = int64(off + size)
	return w.skip(int64(off))
}

// nextCompressed walks to the next compressed record and makes its zstd
// data cur; io.EOF at the end of the records.
func (w *walker) nextCompressed() error {
	for {
		if w.pos >= w.dataEnd {
			w.done = true
			return io.EOF
		}
		ok, err := w.fill(8)
		if !ok {
			if err == nil && w.end == w.start {
				w.done = true
				return io.EOF
			}
			return fmt.Errorf("offset %d: record header cut short (%v)", w.pos, err)
		}
		h := w.buf[w.start:]
		typ, n := w.order.Uint32(h), int64(w.order.Uint16(h[6:]))
		if w.pipe && (typ == 0 || typ > 0xffff) {
			// perf's stderr text after the last record
			w.done = true
			return io.EOF
		}
		if n < 8 {
			return fmt.Errorf("offset %d: record size %d", w.pos, n)
		}
		var data []byte
		var extra int64 // a payload that follows header.size
		if typ == recordCompressed || typ == recordCompressed2 || typ == recordAuxtrace || typ == recordTracingData {
			if ok, err := w.fill(16); !ok {
				return fmt.Errorf("offset %d: record cut short (%v)", w.pos, err)
			}
			h = w.buf[w.start:]
		}
		switch typ {
		case recordCompressed:
			if ok, err := w.fill(int(n)); !ok {
				return fmt.Errorf("offset %d: record cut short (%v)", w.pos, err)
			}
			data = w.buf[w.start+8 : w.start+int(n)]
		case recordCompressed2:
			// data_size decides: align8(16+data_size) may exceed the
			// u16 header.size, which then holds it wrapped.
			ds := int64(w.order.Uint64(h[8:]))
			if want := (16 + ds + 7) &^ 7; ds >= 0 && ds < 1<<30 && want > n && want&0xffff == n {
				n = want
			}
			if ds < 0 || 16+ds > n {
				return fmt.Errorf("offset %d: COMPRESSED2 data_size %d exceeds the record's %d bytes", w.pos, ds, n)
			}
			if ok, err := w.fill(int(n)); !ok {
				return fmt.Errorf("offset %d: record cut short (%v)", w.pos, err)
			}
			data = w.buf[w.start+16 : w.start+16+int(ds)]
		case recordAuxtrace:
			extra = int64(w.order.Uint64(h[8:]))
		case recordTracingData:
			if extra = int64(w.order.Uint32(h[8:])); n > 12 && n >= 12+extra {
				extra = 0 // simpleperf's: the payload inside the record
			}
		}
		if err := w.skip(n + extra); err != nil {
			return err
		}
		if data != nil {
			w.compressed++
			w.cur = data
			return nil
		}
	}
}

// Read gives the zstd decoder the compressed records' data. cur stays valid
// until the next nextCompressed: skip leaves buf's bytes in place, and the
// record is whole in buf.
func (w *walker) Read(p []byte) (int, error) {
	for len(w.cur) == 0 {
		if err := w.nextCompressed(); err != nil {
			return 0, err
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

// decompress decompresses every compressed record's data and returns the
// number of decompressed bytes.
func (w *walker) decompress() (int64, error) {
	if err := w.header(); err != nil {
		return 0, err
	}
	dec, err := zstd.NewReader(w, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20))
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	n, err := dec.WriteTo(io.Discard)
	if errors.Is(err, io.ErrUnexpectedEOF) && w.done {
		// perf 6.1 can leave the stream unended, its last record
		// clipped (bench/README.md): what was there is decompressed.
		err = nil
	}
	return n, err
}

// readOrdered reads the recording's records in time order and returns how
// many there were.
func readOrdered(name string) (int64, error) {
	f, err := perfdata.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
	var n int64
	for rs.Next() {
		n++
	}
	return n, rs.Err()
}
