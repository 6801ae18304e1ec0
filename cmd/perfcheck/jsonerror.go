package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// jsonError is what a --json run that exits 2 prints on stdout when it
// printed no JSON of its own (docs/commands-check.md, "Errors in JSON").
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
