package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parseFileArgs parses the flags of a command that takes one recording
// (info, stats, buildids): --json, before or after the file name. It
// returns code -1 to go on, else the exit code to return.
func parseFileArgs(name, usage, about string, args []string, stderr io.Writer) (file string, jsonOut bool, code int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&jsonOut, "json", false, "print JSON (fields in docs/commands.md)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage:", usage)
		fmt.Fprintln(stderr, about)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", false, exitOK
			}
			return "", false, exitError
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", false, exitError
	}
	return pos[0], jsonOut, -1
}
