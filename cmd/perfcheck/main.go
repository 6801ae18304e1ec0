// Command perfcheck reads Linux perf.data files and tells whether the
// function names in them can be trusted. See docs/ for the user guide.
//
// Each subcommand lives in its own file (cmd_NAME.go) and registers itself in
// init with register. main only dispatches: flags, output and exit codes are
// the subcommand's business, logic belongs in the library packages.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/term"
)

// Exit codes shared by every subcommand (docs/commands-check.md, "Exit
// status"; docs/commands.md).
const (
	exitOK       = 0 // clean
	exitProblems = 1 // the check found problems (or buildid found a binary without one)
	exitError    = 2 // usage or read error
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and the standard streams, and returns the process exit code.
type command struct {
	name    string
	usage   string // one line: "perfcheck NAME [flags] ARGS"
	summary string // one line for the help listing
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// jsonLines: --json prints JSON Lines (one object per line), so a
	// failure after some output still ends with an error object.
	jsonLines bool
}

var commands = map[string]*command{}

// register adds c to the subcommand table; it is called from init in each
// cmd_*.go file.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("perfcheck: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand. "perfcheck perf.data" is short for
// "perfcheck check perf.data": an argument that names no subcommand is taken
// as the check's input.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	if c, ok := commands[args[0]]; ok {
		return runCommand(c, args[1:], stdin, stdout, stderr)
	}
	if c, ok := commands["check"]; ok {
		return runCommand(c, args, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "perfcheck: unknown command %q\n", args[0])
	usage(stderr)
	return exitError
}

// jsonError is what a --json run that exits 2 prints on stdout when it
// printed no JSON of its own (docs/commands.md, "Errors in JSON").
type jsonError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// runCommand runs c. With --json, a run that exits 2 having printed no
// JSON (a usage error, an unreadable file) prints a jsonError on stdout,
// so that a caller parsing stdout gets JSON whatever happens; so does a
// JSON Lines command whatever it printed before. The message is the one
// on stderr.
func runCommand(c *command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if !wantsJSON(args) {
		return c.run(args, stdin, stdout, stderr)
	}
	out := &countWriter{w: stdout}
	diag := &diagWriter{w: stderr, prefix: "perfcheck " + c.name + ": "}
	code := c.run(args, stdin, out, diag)
	if code == exitError && (out.n == 0 || c.jsonLines) {
		write := writeJSON
		if c.jsonLines {
			write = func(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) } // one line
		}
		if err := write(stdout, jsonError{Error: diag.message(), ExitCode: code}); err != nil {
			fmt.Fprintf(stderr, "perfcheck %s: %v\n", c.name, err)
		}
	}
	return code
}

// wantsJSON reports whether args ask for --json (before any "--").
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-json", "--json", "-json=true", "--json=true", "-json=1", "--json=1":
			return true
		}
	}
	return false
}

// countWriter counts what is written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// diagWriter passes stderr through and keeps its lines, to say in JSON
// what went wrong.
type diagWriter struct {
	w      io.Writer
	prefix string // "perfcheck NAME: ", errorf's
	buf    strings.Builder
}

func (d *diagWriter) Write(p []byte) (int, error) {
	d.buf.Write(p)
	return d.w.Write(p)
}

// Unwrap gives the stream written to, so that the progress bar still
// sees a terminal (terminalFile).
func (d *diagWriter) Unwrap() io.Writer { return d.w }

// message is the last error errorf printed, else the first line written
// (the flag package's own usage errors), else "usage error".
func (d *diagWriter) message() string {
	lines := strings.Split(strings.TrimSpace(d.buf.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m, ok := strings.CutPrefix(lines[i], d.prefix); ok && !strings.HasPrefix(m, "note: ") {
			return m
		}
	}
	if lines[0] != "" {
		return lines[0]
	}
	return "usage error"
}

// terminalFile is the file behind w when it is a terminal.
func terminalFile(w io.Writer) (*os.File, bool) {
	for {
		switch v := w.(type) {
		case *os.File:
			return v, term.IsTerminal(int(v.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return nil, false
		}
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: perfcheck [check] [flags] perf.data")
	fmt.Fprintln(w, "       perfcheck COMMAND [flags] ARGS")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every command that prints takes --json. 'perfcheck COMMAND -h' shows its flags.")
}

// writeJSON prints v as indented JSON followed by a newline: the one JSON
// style of every subcommand.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errorf prints a diagnostic prefixed with the command name on stderr and
// returns exitError, so that failing paths read `return errorf(...)`.
func errorf(stderr io.Writer, name, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(stderr, "perfcheck %s: %s\n", name, strings.TrimSuffix(msg, "\n"))
	return exitError
}
