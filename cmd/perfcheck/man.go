package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

func init() {
	register(&command{
		name:    "man",
		usage:   "perfcheck man [DIR]",
		summary: "write the man pages, perfcheck.1 and one perfcheck-COMMAND.1 per command, into DIR (default .)",
		run:     runMan,
	})
}

func runMan(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	const name = "man"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: perfcheck man [DIR]")
		fmt.Fprintln(stderr, "Writes perfcheck.1 and perfcheck-COMMAND.1 into DIR (default .), replacing pages of those names.")
	}
	pos, code := interspersed(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, stderr, "one directory expected, got %q", pos)
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	pages := manPages(commandSpecs())
	for _, p := range pages {
		write := func(w io.Writer) error { _, err := w.Write(p.text); return err }
		if err := writeFile(filepath.Join(dir, p.file), nil, write); err != nil {
			return errorf(stderr, name, "%v", err)
		}
		fmt.Fprintln(stdout, filepath.Join(dir, p.file))
	}
	return exitOK
}

type manPage struct {
	file string
	text []byte
}

// manPages renders perfcheck.1, listing the commands, and a page per
// command line (perfcheck-cache-fill.1 for a subcommand).
func manPages(specs []cmdSpec) []manPage {
	var out []manPage
	var idx bytes.Buffer
	manHeader(&idx, "perfcheck", "check that the function names in Linux perf.data files can be trusted")
	idx.WriteString(".SH SYNOPSIS\n")
	idx.WriteString(".B perfcheck\n" + roff("[check] [flags] [perf.data]") + "\n.br\n")
	idx.WriteString(".B perfcheck\n" + roff("COMMAND [flags] ARGS") + "\n")
	idx.WriteString(".SH DESCRIPTION\n")
	idx.WriteString(roff("perfcheck reads Linux perf.data files, finds each profiled binary by its build-id and names functions only with that binary. With no command it checks the file given, or ./perf.data.") + "\n")
	idx.WriteString(".SH COMMANDS\n")
	var seeAlso []string
	for _, s := range specs {
		page := "perfcheck-" + strings.Join(s.path, "-")
		seeAlso = append(seeAlso, page)
		if len(s.path) == 1 {
			fmt.Fprintf(&idx, ".TP\n.B %s\n%s\n", roff(s.path[0]), roff(s.summary))
		}
		out = append(out, manPage{file: page + ".1", text: commandPage(page, s)})
	}
	idx.WriteString(".SH EXIT STATUS\n")
	idx.WriteString(roff("0 when clean, 1 when the check found problems, 2 on a usage or read error.") + "\n")
	writeSeeAlso(&idx, seeAlso)
	return append([]manPage{{file: "perfcheck.1", text: idx.Bytes()}}, out...)
}

func commandPage(page string, s cmdSpec) []byte {
	var b bytes.Buffer
	manHeader(&b, page, s.summary)
	b.WriteString(".SH SYNOPSIS\n" + roff(strings.TrimPrefix(s.usage, "usage: ")) + "\n")
	b.WriteString(".SH DESCRIPTION\n" + roff(s.summary) + "\n")
	if len(s.path) == 1 && len(subcommandsOf(s.path[0])) > 0 {
		b.WriteString(".PP\n" + roff("Subcommands: "+strings.Join(subcommandsOf(s.path[0]), ", ")+"; each has its own page.") + "\n")
	}
	if len(s.options) > 0 {
		b.WriteString(".SH OPTIONS\n")
		for _, o := range s.options {
			var names []string
			for _, n := range o.names {
				names = append(names, `\fB`+roff(dash(n))+`\fR`)
			}
			head := strings.Join(names, ", ")
			if o.arg != "" {
				head += ` \fI` + roff(o.arg) + `\fR`
			}
			usage := o.usage
			if o.def != "" {
				usage += " (default " + o.def + ")"
			}
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", head, roff(usage))
		}
	}
	see := []string{"perfcheck"}
	if len(s.path) == 2 {
		see = append(see, "perfcheck-"+s.path[0])
	}
	writeSeeAlso(&b, see)
	return b.Bytes()
}

func manHeader(b *bytes.Buffer, page, summary string) {
	fmt.Fprintf(b, ".TH %s 1 \"\" perfcheck \"perfcheck manual\"\n", strings.ToUpper(page))
	// Flags and paths must read as typed: no hyphenation, no stretched
	// spaces.
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\n" + roff(page) + ` \- ` + roff(summary) + "\n")
}

func writeSeeAlso(b *bytes.Buffer, pages []string) {
	b.WriteString(".SH SEE ALSO\n")
	for i, p := range pages {
		sep := ","
		if i == len(pages)-1 {
			sep = ""
		}
		fmt.Fprintf(b, ".BR %s (1)%s\n", roff(p), sep)
	}
}

// roff escapes text for a roff line: backslashes, hyphens (which roff
// would render as a typographic hyphen, breaking copied flags), and a
// leading dot or quote, which would make the line a request. A comma may
// end a line (\:), so that a long list of fields still fits the width.
func roff(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.NewReplacer(`\`, `\e`, `-`, `\-`, ",", `,\:`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
