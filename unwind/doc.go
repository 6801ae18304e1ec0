// Package unwind recovers the user callers of a sample recorded with
// perf record --call-graph dwarf, from the copy of its user stack and
// registers and the call-frame information (.eh_frame) of the binaries the
// stack runs through, as perf's own DWARF unwinders (libunwind, libdw) do.
// Only x86-64 stacks are unwound.
//
// ReadTable reads one ELF file's tables, checking its build-id on the
// open file when asked; Walk follows a UserStack from
// frame to frame, asking its caller, through a TableFunc, for the table of
// each address. Which file's tables may describe the code that ran is the
// caller's decision: tables of another build of a binary would invent
// callers, and this package cannot tell.
//
// # Security
//
// The stack copy, the registers and the tables are untrusted. .eh_frame is
// read only up to 64 MB, by a bounds-checked reader, and a malformed one
// is a *FormatError with its file offset; remember_state nests at most
// 16 deep, in scratch space Walk reuses, allocating nothing; a walk is at most
// MaxFrames frames, reads only inside the stack copy, never follows a rule
// that would move the stack pointer back towards the leaf, and stops at
// the first rule it does not follow (register-to-register rules, register
// expressions, CFA expressions with branches or unknown operations). CFA
// expressions, which PLT stubs use, are evaluated in at most 64 operations
// on a stack of at most 16 values. ReadTable opens only regular files, without blocking, and turns
// a panic of debug/elf on a malformed file into an error naming the file
// (internal/safeelf).
package unwind
