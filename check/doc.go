// Package check decides whether the function names of a perf recording can
// be trusted, and gives the names that can.
//
// It joins the other packages: perfdata's records rebuild every process's
// address space (package addrspace), each sampled address — the leaf and
// every callchain entry, user and kernel, and on x86-64 the user frames
// unwound from --call-graph dwarf stack copies (package unwind) with the
// call-frame information of binaries proven to be the ones that ran — is
// resolved to a DSO and a file offset,
// each DSO gets its recorded identity (the MMAP2 build-id, else the header's
// build-id table, else MMAP2's device and inode, else the path) and a
// Verdict (verified, mismatch, missing, unverified, replaced, or no-file for
// memory without a file), and only DSOs whose verdict allows it are
// symbolized. A frame in a mismatch, missing or replaced DSO is never
// named: it stays "dso+0xoffset" with the DSO's reason. docs/verdicts.md
// gives every rule.
//
// # Use
//
//	res, err := check.Analyze(ctx, check.Path("perf.data"), check.Options{})
//	rep := res.Report()          // the table: DSOs, verdicts, hits, advice
//	if rep.Failed(strict) { ... } // exit status of `perfcheck check`
//
// Result also holds what the script, top and pprof commands build on:
//   - Result.Locations: every distinct (DSO, offset), with its frames
//     (function, file:line, inlined ones leaf first) when its DSO may be
//     symbolized; Location.Trusted and Location.String give the trust mark
//     and the "function (dso)" / "dso+0xoffset [verdict]" label;
//   - Result.Stacks: every distinct stack, with Trusted and LeafTrusted;
//     Stack.Locations gives its locations, leaf first (built on first
//     use: the check alone needs none);
//   - Result.Aggregates: samples and period per (stack, event, pid, tid,
//     comm) — the unit of top and pprof;
//   - Result.EachSample: every sample in time order, read again from the
//     recording when Options.Replay was set (script); Result.Close
//     releases what that kept.
//
// Options.ReportOnly (check) and Options.Replay count samples by their
// DSOs instead of their stacks, so their Results have no stacks and no
// aggregates.
//
// Memory is bounded by the number of distinct stacks and threads, not of
// samples: stacks are deduplicated by their resolved content, each
// distinct location is symbolized once, in parallel, and EachSample hands
// the samples over one at a time as it reads them again.
//
// Analyze reads a file by name (Path), a file already open (File) or a
// pipe-mode stream (Stream). An addrspace.Tracker alone rebuilds address
// spaces, for a user who needs only the DSO of each sample.
//
// Binaries are found by the buildidcache package's Resolver. The zero
// Options looks where `perfcheck check` does by default: perf's build-id
// cache ($PERF_BUILDID_DIR, buildid.dir in ~/.perfconfig, $HOME/.debug),
// /usr/lib/debug, the servers of $DEBUGINFOD_URLS, then the recorded path;
// Options.Lookup changes that order, and Options.Resolver shares one
// Resolver (and its downloads) between analyses.
//
// # Security
//
// Everything in a perf.data file is untrusted, file names included. The
// package itself only reads (binaries through symbolize and unwind, which
// open them; check opens no ELF file): the recording, the files at the recorded
// paths (under the SymFS root when one is set, the Resolver's or
// Options.Lookup's, cleaned so that ".." cannot climb out of it), perf's
// build-id cache, debug directories, /proc/kallsyms, /proc/modules and
// /sys/module/NAME (NAME checked to be a plain module name, so a recorded
// path cannot lead elsewhere) and /tmp/perf-PID.map files; the only file
// it writes is a private temporary copy of the running vdso (mode 0600,
// removed before Analyze returns) when a recorded vdso is verified
// against it. The Resolver it looks binaries up with goes further when
// debuginfod servers are named (the zero Options takes $DEBUGINFOD_URLS):
// it sends the recorded build-ids to them and writes what they serve,
// verified by build-id, into elfutils' debuginfod client cache (or a
// scratch directory removed when the Resolver is closed), where it also
// remembers misses and removes a cached file whose build-id is wrong
// (see package buildidcache). With no server named there is no network
// access. Nothing else is modified, renamed or deleted. Memory grows with the
// distinct stacks, mappings and threads of the input, each bounded by the
// input's size. A malformed binary makes its DSO unsymbolized with an
// error in the report; it never aborts the check or panics. Unwind tables
// (.eh_frame, at most 64 MB) are parsed by a bounds-checked reader; a walk
// is at most 127 frames, reads only inside the sample's stack copy, and
// stops at the first rule it cannot follow. A compressed .ko is
// decompressed in memory, never to disk, up to a bound set by its
// compressed size (buildidcache.ReadModule). Binaries, debug files and
// modules are opened non-blocking and read only when the open descriptor
// is a regular file, so a recorded path naming a FIFO or a device cannot
// stall the check; the build-id of unwind tables, module symbols and every
// file names are read from is checked on the file actually opened, so a
// binary replaced after its verdict names nothing (docs/check-symbols.md).
package check
