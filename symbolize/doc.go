// Package symbolize turns addresses inside a binary into frames: function
// name, source file, line and column, with inlined frames expanded leaf
// first, as addr2line -f -i and llvm-symbolizer do.
//
// Open a binary with [Open], convert a runtime address to a file address
// with [Binary.Bias], and ask [Binary.Frames]. Callers never name a backend: a [Binary] consults, in
// order, DWARF (its own or a separate debug file found through
// [Options.DebugFile]), the Go pclntab, and the ELF symbol tables (.symtab,
// .dynsym, MiniDebugInfo, synthesized foo@plt entries). Text symbol lists —
// kallsyms and perf's /tmp/perf-PID.map — open through the same [Open] and
// answer through the same [Symbolizer] interface; [OpenRunningKernel] gives
// this boot's /proc/kallsyms from one parse per process. A kernel module's
// offsets from its load address are named by a [Module], read from its .ko
// ([ReadModule]) or its lines of a kallsyms listing ([ReadLoadedModule]).
// [ReadSegments] reads an ELF file's PT_LOAD segments alone. The readers
// that take a build-id check it on the file they opened. docs/symbolize.md gives the
// address mapping rules, the order of backends and the known differences with
// addr2line and llvm-symbolizer.
//
// Indexes are built lazily: opening reads only the ELF headers; the symbol
// table is sorted on the first lookup, and DWARF is indexed one compilation
// unit at a time, when an address first falls in it (least recently used
// units are dropped beyond [Options.MaxDecodedDWARF]). After that a lookup
// allocates nothing when the caller passes back the buffer of the previous
// call.
//
// # Security
//
// Binaries are untrusted input. Every call into debug/elf, debug/dwarf and
// debug/gosym, which may panic on malformed input, goes through one wrapper
// that turns a panic into an error naming the file ([ErrMalformed]); a
// malformed binary yields an error, never a crash. Our own decoders check
// every length. Where those packages would allocate by a count read from
// the binary (line table directories and files, pclntab functions) or
// loop without progress, the count is checked against the bytes that hold
// it first. What is decompressed (DWARF, MiniDebugInfo, any compressed
// section) is reserved from one memory budget per run before it is
// allocated, and a binary that does not fit gets an error wrapping
// [ErrTooLarge]; xz dictionaries are capped at what the data needs.
// Uncompressed data is read only as far as the file backs it. A file
// truncated or rewritten after it was opened is read with the same checks
// as any input: loads and lookups fail with errors or warnings. Decoded
// DWARF is bounded per binary by [Options.MaxDecodedDWARF].
// docs/limits.md gives the bounds and the tests that prove them.
// The package only reads files: it never writes, renames or deletes anything,
// and it opens only the paths it is given, the separate debug file the
// [Options.DebugFile] locator returns, and /proc/kallsyms for
// [OpenRunningKernel] and [RunningKernelSymbol]. Only regular files are
// opened, without blocking: a FIFO at a recorded path cannot hang a caller.
package symbolize
