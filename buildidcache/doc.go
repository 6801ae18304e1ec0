// Package buildidcache finds the exact binary that a profile recorded, by
// build-id, and proves it.
//
// It has three parts:
//
//   - Reading identities from ELF files: [ReadFileIdentity] and
//     [ReadIdentity] return the GNU build-id (the NT_GNU_BUILD_ID note, any
//     length), the Go build-id (.note.go.buildid), the .gnu_debuglink and how
//     much debug information the file carries. [KernelBuildID] reads the
//     running kernel's build-id from /sys/kernel/notes and [VDSO] the
//     running vDSO's; [BuildIDFromNotes] finds the GNU build-id among raw
//     notes such as /sys/module/NAME/notes/.note.gnu.build-id.
//     [OpenVerified] and [ImageBuildID] check, on the file a reader then
//     reads, that it carries the build-id a lookup found at its path
//     ([MismatchError] otherwise): the readers of unwind and symbolize use
//     them.
//   - Looking binaries up: a [Resolver] runs an ordered chain of locators
//     (perf's build-id cache, debug directories, debuginfod servers, the
//     recorded path) and accepts a candidate only when its build-id matches.
//     Each [Result] says which locator and which file answered, and which
//     candidates were rejected and why.
//   - Filling perf's cache: [Cache] adds, lists and prunes entries in the
//     layout perf 6.x writes under ~/.debug, so perf itself reads them.
//
// The layout, the lookup order and the choices made where perf, elfutils and
// this package differ are written down in docs/buildidcache.md.
//
// # Security
//
// Reading an identity reads only the ELF header, the program and section
// header tables and the note, string-table and .gnu_debuglink bytes, each
// bounded by the file's size and by fixed caps, so a hostile file costs a few
// small reads and never a large allocation; all its note regions
// together cost at most the file's size. The one exception is a
// compressed kernel module (.ko.xz, .ko.zst, .ko.gz), which must be
// decompressed to be read; it is decompressed in memory only as far as
// needed and never past the size the stream declares (xz's index, the zstd
// frame's content size, gzip's trailer), which may be at most 64 times its
// compressed size plus 16 MiB (256 MiB at most). Before a decoder is made,
// that size and the decoder's window are borrowed from the run's
// decompression budget (internal/budget), and an xz block's dictionary is
// capped at that size whatever the block declares, so that a stream of a
// few bytes declaring a 4 GiB dictionary costs what its size justifies.
// [ReadModule], which returns a whole module for symbolizing,
// and [ReadModuleIdentity], which returns its identity and the image it
// was read from (one open, one decompression), decompress under the same
// bound and recognise the compression by magic bytes, never by file name.
// No code here panics on malformed input; errors carry the file name and
// byte offset ([FormatError]).
//
// File names that come from a perf.data file are untrusted. [Cache] cleans
// every such name, refuses ".." components, control characters and empty
// names, accepts a .build-id link only when it names an entry directory of
// its own build-id (so that Prune cannot be steered), and
// does every write through an [os.Root] opened on the cache directory, so
// neither a crafted name nor a symlink planted inside the cache can make a
// write land outside it. Prune's search for orphaned entry directories
// walks that root without following symbolic links and removes only
// directories shaped and filled as perf's entries (named by a build-id of
// a real length, never holding perf probe's probes file), unchanged for an
// hour, and only when every .build-id link could be read; it removes the
// files it examined, each only while it is the same inode, and never
// removes recursively.
// [Cache.AddRecordedMapping] may read a binary through /proc/PID/root of
// a recorded process, another process's view of the file system, whose
// owner may have written any build-id note into it; it looks there only
// when the host's own file (or SymFS's) does not verify, caches what it
// finds only when it also is the inode the recording mapped (or, with none
// recorded, one that process maps now) and has the recorded build-id, and
// always copies it from the descriptor it checked, never hard-links it.
// The Resolver, too, tries the host's file before /proc/PID/root. Writes go to a temporary name and are renamed into
// place; a lookup never trusts a file it did not verify by build-id.
//
// Network access happens only when a debuginfod URL is configured, and every
// downloaded file is checked against the build-id that was asked for; a file
// with another build-id is deleted, not cached, and reported in
// [Result.Rejected]; so is such a file found already in the debuginfod
// cache. A download is bounded as elfutils bounds it — a size cap
// ($DEBUGINFOD_MAXSIZE, else 1 GiB for an executable and 4 GiB for
// debuginfo), 100 KiB of progress per $DEBUGINFOD_TIMEOUT and a total time
// ($DEBUGINFOD_MAXTIME, else 30 s, which all of a Resolver's downloads
// share) — and more: it must be an ELF file with
// no byte past what its headers describe, it is never decompressed on the
// way (no gzip content encoding), and the client cache is read and
// written only through an [os.Root], so a symlink there cannot lead a
// removal or a write outside it.
package buildidcache
