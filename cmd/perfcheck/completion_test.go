package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specByName is the generated spec of a command line ("top", "cache fill").
func specByName(t *testing.T, name string) cmdSpec {
	t.Helper()
	for _, s := range commandSpecs() {
		if s.name() == name {
			return s
		}
	}
	t.Fatalf("no spec %q", name)
	return cmdSpec{}
}

// The walk finds each command's real flag set: every name the command
// parses is there, aliases are one option, and the run stopped before the
// command did anything (man, run for its flags, writes no page).
func TestCommandSpecsWalkRealFlagSets(t *testing.T) {
	t.Parallel()
	for _, s := range commandSpecs() {
		switch s.name() {
		case "version", "completion", "cache":
			assert.Empty(t, s.options, s.name())
		case "man":
			assert.Empty(t, s.options, s.name()) // a flag set without flags
		default:
			assert.NotEmpty(t, s.options, s.name())
		}
	}
	top := specByName(t, "top")
	names := map[string]option{}
	for _, o := range top.options {
		names[strings.Join(o.names, " ")] = o
	}
	require.Contains(t, names, "i input")
	assert.Equal(t, "FILE", names["i input"].arg)
	require.Contains(t, names, "e event")
	require.Contains(t, names, "json")
	assert.Equal(t, "", names["json"].arg, "a bool flag takes no value")
	require.Contains(t, names, "percent-limit")
	sym := specByName(t, "symbolize")
	for _, o := range sym.options {
		if strings.Join(o.names, " ") == "e exe" {
			assert.NotContains(t, o.usage, "same as", "the alias's usage is the real one")
		}
	}
	require.NotNil(t, collectFlags(commands["man"], nil))
	_, err := os.Stat("perfcheck.1")
	assert.True(t, os.IsNotExist(err), "collecting man's flags wrote a page")
	// The subcommands named are the ones runCache dispatches: each has a
	// flag set of its own.
	for _, sub := range subcommandsOf("cache") {
		assert.NotNil(t, collectFlags(commands["cache"], []string{sub}), sub)
	}
}

func TestCompletionUsageErrors(t *testing.T) {
	t.Parallel()
	_, errs, code := ckRun(t, "completion", "tcsh")
	assert.Equal(t, exitError, code)
	assert.Equal(t, "perfcheck completion: one shell expected (bash, zsh or fish), got [\"tcsh\"]\nusage: perfcheck completion bash|zsh|fish\n", errs)
	_, errs, code = ckRun(t, "completion")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "got []\n")
}

// usageOf is the completion menu's text for a flag of a command line:
// its usage up to the first clause.
func usageOf(t *testing.T, cmd, flagName string) string {
	t.Helper()
	for _, o := range specByName(t, cmd).options {
		for _, n := range o.names {
			if n == flagName {
				return firstLine(o.usage)
			}
		}
	}
	t.Fatalf("%s has no flag %s", cmd, flagName)
	return ""
}

// completionScript writes `perfcheck completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	out, errs, code := ckRun(t, "completion", shell)
	require.Equal(t, exitOK, code, errs)
	p := filepath.Join(t.TempDir(), "perfcheck."+shell)
	require.NoError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

// bashComplete sources the script in a real bash, sets COMP_WORDS to
// words (the last is the word being completed) and returns COMPREPLY,
// sorted. dir is the working directory, for file names.
func bashComplete(t *testing.T, script, dir string, words ...string) []string {
	t.Helper()
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, strconv.Quote(w))
	}
	prog := "source " + strconv.Quote(script) + "\n" +
		"complete -p perfcheck >/dev/null || exit 3\n" +
		"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
		"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n" +
		"COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}\n" +
		"_perfcheck\n" +
		"printf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := strings.Fields(string(out))
	sort.Strings(got)
	return got
}

func TestBashCompletion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	script := completionScript(t, "bash")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "perf.data"), nil, 0o644))

	first := bashComplete(t, script, dir, "perfcheck", "")
	for _, c := range []string{"check", "top", "script", "cache", "info", "completion", "man", "perf.data"} {
		assert.Contains(t, first, c)
	}
	assert.Equal(t, []string{"top"}, bashComplete(t, script, dir, "perfcheck", "to"))
	assert.Equal(t, []string{"--percent-limit"}, bashComplete(t, script, dir, "perfcheck", "top", "--per"))
	assert.Equal(t, []string{"add", "fill", "list", "prune"}, bashComplete(t, script, dir, "perfcheck", "cache", ""))
	assert.Equal(t, []string{"--buildid-dir"}, bashComplete(t, script, dir, "perfcheck", "cache", "fill", "--buildid"))
	// A flag's value and a positional argument are file names.
	assert.Equal(t, []string{"perf.data"}, bashComplete(t, script, dir, "perfcheck", "top", "-i", "pe"))
	assert.Equal(t, []string{"perf.data"}, bashComplete(t, script, dir, "perfcheck", "top", "--json", "p"))
	// "perfcheck perf.data --json" is the check.
	assert.Equal(t, []string{"--json"}, bashComplete(t, script, dir, "perfcheck", "perf.data", "--js"))

	// Every command line offers exactly the flags its flag set has.
	for _, s := range commandSpecs() {
		all, _ := flagWords(s)
		if len(all) == 0 {
			continue
		}
		sort.Strings(all)
		words := append(append([]string{"perfcheck"}, s.path...), "-")
		assert.Equal(t, all, bashComplete(t, script, dir, words...), s.name())
	}
}

// zsh's completion system needs an interactive line editor, so the test
// parses the script with zsh -n and runs its dispatch with _arguments,
// _describe, _files and compadd printing what they are given.
func TestZshCompletion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed")
	}
	script := completionScript(t, "zsh")
	out, err := exec.Command("zsh", "-n", script).CombinedOutput()
	require.NoError(t, err, "%s", out)
	complete := func(words ...string) string {
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, strconv.Quote(w))
		}
		prog := `compdef() { :; }; _arguments() { print -l -- "$@" }; _describe() { print -l -- $cmds }; _files() { print _files }; compadd() { print -l -- "$@" }` + "\n" +
			"source " + strconv.Quote(script) + "\n" +
			"words=(" + strings.Join(quoted, " ") + "); CURRENT=" + strconv.Itoa(len(words)) + "\n_perfcheck\n"
		out, err := exec.Command("zsh", "-f", "-c", prog).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.Contains(t, complete("perfcheck", ""), "top:hottest functions by self and total time\n")
	assert.Contains(t, complete("perfcheck", "top", "--per"), "--percent-limit["+usageOf(t, "top", "percent-limit")+"]:PCT:_files\n")
	assert.NotContains(t, complete("perfcheck", "top", "--per"), "--brief[")
	assert.Contains(t, complete("perfcheck", "perf.data", "--br"), "--brief[")
	assert.Equal(t, "--\nadd\nfill\nlist\nprune\n", complete("perfcheck", "cache", ""))
	assert.Contains(t, complete("perfcheck", "cache", "fill", "--b"), "--buildid-dir[perf's build-id cache]:STRING:_files\n")
	assert.Equal(t, "perf's build-id cache", usageOf(t, "cache fill", "buildid-dir"))
}

// fish completes non-interactively with complete -C.
func TestFishCompletion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("fish is not installed")
	}
	script := completionScript(t, "fish")
	out, err := exec.Command("fish", "-n", script).CombinedOutput()
	require.NoError(t, err, "%s", out)
	complete := func(line string) string {
		cmd := exec.Command("fish", "--no-config", "-c", "source "+strconv.Quote(script)+"; complete -C "+strconv.Quote(line))
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	assert.Equal(t, "--percent-limit\t"+usageOf(t, "top", "percent-limit")+"\n", complete("perfcheck top --per"))
	assert.Equal(t, "add\nfill\nlist\nprune\n", complete("perfcheck cache "))
	assert.Equal(t, "--buildid-dir\tperf's build-id cache\n", complete("perfcheck cache fill --build"))
	assert.Equal(t, "--json\t"+usageOf(t, "check", "json")+"\n", complete("perfcheck perf.data --js"))
	assert.Contains(t, complete("perfcheck "), "script\t")
}
