package main

import (
	"flag"
	"io"
	"reflect"
	"sort"
	"strings"
)

// The shell completion scripts and the man pages are generated from the
// flag sets the commands parse with, so that they cannot drift from the
// command line (docs/cli.md). A command builds its flag set inside its run
// function; to get it without running the command, the generators run the
// command with a flagCollector as its diagnostic stream. The flag set's
// output is that stream, and the parsing helpers (interspersed,
// parseSymbolizeFlags) hand the set to the collector and end the command
// before it parses or reads anything.

// flagCollector is the diagnostic stream of a command run only for its flag
// set; what the command would print there is dropped.
type flagCollector struct {
	fs *flag.FlagSet
}

func (c *flagCollector) Write(p []byte) (int, error) { return len(p), nil }

// collected reports whether fs belongs to a run for its flag set, and
// gives the set to the collector when it does.
func collected(fs *flag.FlagSet) bool {
	c, ok := fs.Output().(*flagCollector)
	if ok {
		c.fs = fs
	}
	return ok
}

// subcommandsOf returns the subcommands of the command name, nil when it
// has none.
func subcommandsOf(name string) []string {
	if c := commands[name]; c != nil {
		return c.subcommands
	}
	return nil
}

// cmdSpec is one command line of the generated documentation: a command,
// or a command and one of its subcommands.
type cmdSpec struct {
	path    []string // "top", or "cache", "fill"
	usage   string
	summary string
	options []option
}

func (s cmdSpec) name() string { return strings.Join(s.path, " ") }

// option is one flag with every name it is registered under (-i and
// --input are one variable).
type option struct {
	names []string // short ones first: "i", "input"
	arg   string   // the value's placeholder, upper case ("FILE"); "" for a bool flag
	usage string
	def   string // the default when it is not the zero value
}

// dash is how the documentation spells a flag name: -i, --input.
func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// commandSpecs walks every registered command's flag set, in name order.
// The commands with subcommands ("cache") give one spec with no options
// and one per subcommand.
func commandSpecs() []cmdSpec {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []cmdSpec
	for _, n := range names {
		c := commands[n]
		spec := cmdSpec{path: []string{n}, usage: c.usage, summary: c.summary}
		subs := c.subcommands
		if len(subs) == 0 {
			spec.options = flagOptions(collectFlags(c, nil))
		}
		out = append(out, spec)
		for _, s := range subs {
			out = append(out, cmdSpec{
				path:    []string{n, s},
				usage:   "perfcheck " + n + " " + s + " [flags]",
				summary: c.summary,
				options: flagOptions(collectFlags(c, []string{s})),
			})
		}
	}
	return out
}

// collectFlags runs c with args for its flag set; nil when c has none.
func collectFlags(c *command, args []string) *flag.FlagSet {
	col := new(flagCollector)
	c.run(args, strings.NewReader(""), io.Discard, col)
	return col.fs
}

// flagOptions groups the flags of fs by the variable they set, so that
// aliases (-e and --event) are one option; the options are in the order
// of their first name.
func flagOptions(fs *flag.FlagSet) []option {
	if fs == nil {
		return nil
	}
	var out []option
	index := map[any]int{}
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		// The placeholder reads as in perf's manuals: FILE, and STRING
		// where the usage names none.
		arg = strings.ToUpper(arg)
		if isBool(f) {
			arg = ""
		}
		key := any(f)
		if reflect.TypeOf(f.Value).Comparable() {
			key = f.Value
		}
		if i, ok := index[key]; ok {
			o := &out[i]
			o.names = append(o.names, f.Name)
			if strings.HasPrefix(o.usage, "same as ") {
				o.usage = usage
			}
			return
		}
		index[key] = len(out)
		o := option{names: []string{f.Name}, arg: arg, usage: usage}
		if !isZeroDefault(f) {
			o.def = f.DefValue
		}
		out = append(out, o)
	})
	for i := range out {
		sort.SliceStable(out[i].names, func(a, b int) bool {
			return len(out[i].names[a]) == 1 && len(out[i].names[b]) > 1
		})
	}
	sort.SliceStable(out, func(a, b int) bool {
		return strings.ToLower(out[a].names[0]) < strings.ToLower(out[b].names[0])
	})
	return out
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isZeroDefault is the flag package's test for a default not worth
// printing.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "[]", "0s":
		return true
	}
	return false
}
