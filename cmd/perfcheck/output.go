package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/perfcheck/perfcheck/internal/atomicfile"
)

// outputHook, when set (by tests), wraps the writer of -o's file.
var outputHook func(io.Writer) io.Writer

// outputArgs parses the arguments of a command that writes a file with
// -o (pprof, flamegraph, report): it returns the recording named, or an
// exit status (>= 0) after a usage error: flags, the recording, and -o,
// which is required (need says what it takes).
func outputArgs(fs *flag.FlagSet, af *analyzeFlags, args []string, stdin io.Reader, stderr io.Writer, out *string, need string) (string, int) {
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return "", code
	}
	file, err := af.file(pos, stdin)
	if err != nil {
		return "", usageError(fs, stderr, "%v", err)
	}
	if *out == "" {
		return "", usageError(fs, stderr, "-o FILE is required (%s)", need)
	}
	return file, -1
}

// writeFile writes name with write, through a temporary file in the same
// directory renamed over it when complete (internal/atomicfile): an error
// or a signal keeps the previous file whole. "-" writes to stdout.
func writeFile(name string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	f, err := atomicfile.Create(name)
	if err != nil {
		return err
	}
	defer f.Abort()
	var w io.Writer = f
	if outputHook != nil {
		w = outputHook(w)
	}
	if err := write(w); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Commit()
}
