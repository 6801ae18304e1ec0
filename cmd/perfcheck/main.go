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
	// subcommands are the words run dispatches on first ("cache add"),
	// for the completion scripts and man pages; nil for most commands.
	subcommands []string
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
// as the check's input, and "perfcheck" alone checks ./perf.data, as perf
// report reads it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runCommand(commands["check"], nil, stdin, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		return runHelp(args[1:], stdin, stdout, stderr)
	case "-version", "--version":
		printVersion(stdout)
		return exitOK
	}
	if c, ok := commands[args[0]]; ok {
		return runCommand(c, args[1:], stdin, stdout, stderr)
	}
	if near := nearestCommand(args[0]); near != "" {
		fmt.Fprintf(stderr, "perfcheck: unknown command %q (and no such file); did you mean %q?\n", args[0], near)
		usage(stderr)
		return exitError
	}
	return runCommand(commands["check"], args, stdin, stdout, stderr)
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
