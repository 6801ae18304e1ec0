package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
)

func init() {
	register(&command{
		name:    "version",
		usage:   "perfcheck version",
		summary: "the module version and VCS revision this binary was built from (also --version)",
		run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
			if len(args) > 0 {
				fmt.Fprintf(stderr, "perfcheck version: takes no arguments, got %q\n", args)
				fmt.Fprintln(stderr, "usage: perfcheck version")
				return exitError
			}
			printVersion(stdout)
			return exitOK
		},
	})
}

// printVersion prints the module version and the VCS revision the Go
// toolchain stamped into the binary, so that a bug report names the code.
func printVersion(w io.Writer) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "perfcheck (no build information)")
		return
	}
	fmt.Fprintln(w, versionLine(bi))
}

// versionLine is "perfcheck VERSION [REVISION[+modified] TIME] GOVERSION".
func versionLine(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(unknown)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	line := "perfcheck " + version
	if rev != "" {
		line += " " + rev + modified
		if at != "" {
			line += " " + at
		}
	}
	return line + " " + bi.GoVersion
}

// runHelp is "perfcheck help [COMMAND]": the general help, or the
// command's own (its -h, on stdout).
func runHelp(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok || len(args) > 1 {
		msg := fmt.Sprintf("perfcheck help: no command %q", args[0])
		if len(args) > 1 {
			msg = fmt.Sprintf("perfcheck help: one command expected, got %q", args)
		} else if near := nearestCommand(args[0]); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		fmt.Fprintln(stderr, msg)
		usage(stderr)
		return exitError
	}
	if c.name == "version" {
		fmt.Fprintln(stdout, "usage: "+c.usage)
		fmt.Fprintln(stdout, c.summary)
		return exitOK
	}
	// Each command prints its usage and flags for -h on its diagnostic
	// stream; asked for, help belongs on stdout.
	return c.run([]string{"-h"}, stdin, stdout, stdout)
}

// nearestCommand is the command name within two edits of arg, for a
// mistyped command; "" when none is that close or arg is a file.
func nearestCommand(arg string) string {
	if arg == "" || arg[0] == '-' {
		return ""
	}
	if _, err := os.Stat(arg); err == nil {
		return ""
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(arg, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
