// Package perfdata reads Linux perf.data recordings, as written by perf
// record, in pure Go and as a stream.
//
// Open opens a recording by name: a regular file in file format or pipe
// format (perf record -o - > FILE), or the perf.data directory form that
// perf record --threads writes. NewFile does the same for an io.ReaderAt,
// and NewReader reads a stream from any io.Reader: the pipe format of perf
// record -o - | perfcheck, or a file-format recording read in one pass. The header, the attrs and
// the feature table are read at once; feature sections are decoded when
// first asked for (File.Features, File.BuildIDs); records are streamed:
//
//	f, err := perfdata.Open("perf.data")
//	if err != nil { ... }
//	defer f.Close()
//	rs := f.Records(perfdata.RecordsOptions{Ordered: true})
//	for rs.Next() {
//		switch r := rs.Record().(type) {
//		case *perfdata.Mmap2:
//			...
//		case *perfdata.Sample:
//			ev := rs.Events()[r.EventIndex]
//			for mode, ip := range r.Frames() { ... }
//		}
//	}
//	if err := rs.Err(); err != nil { ... }
//
// Every record type that the kernel and the perf tool write is decoded into
// its own struct; a type this package does not know comes back as
// *Unknown. Records inside COMPRESSED and COMPRESSED2 records (perf record
// -z) are expanded in place. Both byte orders and every perf_event_attr
// size are read. With RecordsOptions.Ordered, kernel records are delivered
// in timestamp order the way perf report orders them (FINISHED_ROUND
// rounds); with RecordsOptions.SampleHeadersOnly, samples are checked to
// fit their layout but only their headers are decoded, which is what a
// reader that only counts needs. Records and their slices are
// reused by the next call to Next; decoding allocates nothing per record
// once its buffers have grown.
//
// docs/perfdata.md describes the decisions taken where perf's format leaves
// room, and what is tolerated.
//
// # Security
//
// The input is untrusted. Every length and count read from it is checked
// against what remains of its record, section or file before anything is
// allocated or sliced; sections are read in bounded chunks; compressed data
// may expand at most 1024 times and use at most an 8 MiB zstd window; a
// file-format stream buffers at most 64 MiB before its data and 256 MiB of
// feature sections after it. A
// malformed input gives a *FormatError with the byte offset (and the name
// of the file when known), after the records that precede the problem;
// truncation unwraps to io.ErrUnexpectedEOF. The decoders do not panic and
// do not recover panics. Nothing is written: only the input is read, and
// Open opens only the named file or the data files of the named directory.
package perfdata
