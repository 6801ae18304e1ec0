package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// defaultInput is the recording read when none is named, as perf report's.
const defaultInput = "perf.data"

// inputFlag is perf's -i/--input: the recording a command reads, given as
// a flag or as the one positional argument.
type inputFlag struct{ name string }

func (in *inputFlag) register(fs *flag.FlagSet) {
	const help = "read the recording `FILE` (as perf's -i; default ./perf.data, or standard input when it is a pipe; - for standard input)"
	fs.StringVar(&in.name, "i", "", help)
	fs.StringVar(&in.name, "input", "", help)
}

// file returns the recording to read: -i, else the one positional
// argument, else "-" when stdin is a pipe (as perf does, so that
// `perf record -o - | perfcheck top` works), else ./perf.data.
func (in *inputFlag) file(pos []string, stdin io.Reader) (string, error) {
	switch {
	case in.name != "" && len(pos) > 0:
		return "", fmt.Errorf("both -i %s and %q name the recording; give one", in.name, pos[0])
	case in.name != "":
		return in.name, nil
	case len(pos) == 1:
		return pos[0], nil
	case len(pos) > 1:
		return "", fmt.Errorf("one recording expected, got %d arguments: %q", len(pos), pos)
	case stdinIsPipe(stdin):
		return "-", nil
	}
	return defaultInput, nil
}

// stdinIsPipe reports whether r is the process's standard input and a
// pipe (FIFO).
func stdinIsPipe(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

// usageError prints why the command line is wrong on one line, then the
// command's usage, and returns exitError.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "perfcheck %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitError
}
