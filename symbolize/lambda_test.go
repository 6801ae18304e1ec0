package symbolize

import (
	"bufio"
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiffLambda symbolizes every instruction of .text in a std::regex
// program with lambdas (testdata/symbolize/lambda.cc, g++ -O2 -g) and
// requires the function, file and line of every frame, inlined ones
// included, to equal both addr2line's and llvm-symbolizer's (columns
// too, where llvm-symbolizer gives them), but for the differences
// knownDifferences explains. GCC writes a lambda's operator() and a local
// class's member functions inside the class's DIE within the enclosing
// function's DIE; the inlined calls inside them must be found there.
func TestDiffLambda(t *testing.T) {
	t.Parallel()
	needTool(t, "g++")
	for _, tool := range []string{"addr2line", "llvm-symbolizer", "objdump"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "scripts/test.sh installs %s", tool)
	}
	p := compile(t, t.TempDir(), "lambda", "g++", testdataPath(t, "lambda.cc"), "-O2", "-g")
	addrs := textInsns(t, p)
	require.Greater(t, len(addrs), 10000, "instructions in .text")
	b, err := Open(p, Options{})
	require.NoError(t, err)
	defer b.Close()
	tb := openTestBinary(t, p)
	refs := []struct {
		tool   string
		frames [][]refFrame
		cols   bool
	}{
		{"addr2line", addr2lineFrames(t, p, addrs), false},
		{"llvm-symbolizer", llvmFrames(t, p, addrs), true},
	}
	counts := map[string]int{}
	inside := map[string]int{} // addresses with inlined frames, per lambda below
	var buf []Frame
	for i, addr := range addrs {
		// An address in no function (padding between them) is an
		// error with no frames, and the tools' "??".
		buf, err = b.Frames(addr, buf)
		if err != nil {
			require.Empty(t, buf, "%#x: frames and an error: %v", addr, err)
		}
		a2l, llvm := refs[0].frames[i], refs[1].frames[i]
		c := &diffCase{bin: tb, addr: addr, ours: buf, a2l: a2l, llvm: llvm}
		okA2l := sameFrames(buf, a2l, false) || explain(c, a2l, false) != nil
		okLLVM := sameFrames(buf, llvm, true) || explain(c, llvm, true) != nil
		switch {
		case okA2l && okLLVM:
			counts["same as both"]++
		case sameRefs(a2l, llvm):
			counts["tools agree, ours differs"]++
			t.Errorf("%#x: the tools agree, ours differs\n ours:            %s\n addr2line:       %s\n llvm-symbolizer: %s",
				addr, fmtOurs(buf), fmtRef(a2l), fmtRef(llvm))
		case okA2l:
			counts["same as addr2line only"]++
		case okLLVM:
			counts["same as llvm-symbolizer only"]++
		default:
			counts["neither"]++
			t.Errorf("%#x: ours equals neither tool\n ours:            %s\n addr2line:       %s\n llvm-symbolizer: %s",
				addr, fmtOurs(buf), fmtRef(a2l), fmtRef(llvm))
		}
		if len(buf) > 1 {
			for _, l := range lambdaBodies {
				if l.outer.MatchString(buf[len(buf)-1].Function) && l.inlined(buf[:len(buf)-1]) {
					inside[l.name]++
				}
			}
		}
	}
	for _, l := range lambdaBodies {
		assert.Positive(t, inside[l.name], "no address inside %s has its inlined frames", l.name)
	}
	t.Logf("%d addresses: %v; with inlined frames inside: %v", len(addrs), counts, inside)
}

// lambdaBodies are functions of lambda.cc that GCC writes inside a local
// class's DIE, and the inlined calls at least one of their addresses must
// show.
var lambdaBodies = []struct {
	name    string
	outer   *regexp.Regexp
	inlined func(fr []Frame) bool
}{
	{
		// The case: libstdc++'s lambda whose range-for
		// inlines __normal_iterator's operator!= and vector::end().
		"_BracketMatcher::_M_apply's lambda",
		regexp.MustCompile(`^std::__detail::_BracketMatcher<.*>::_M_apply\(.*\) const::\{lambda\(\)#1\}::operator\(\)\(\) const$`),
		func(fr []Frame) bool {
			return hasFrame(fr, "__normal_iterator") && hasFrame(fr, "std::vector<") && hasFrame(fr, "::end()")
		},
	},
	{
		"sum_over<int>'s lambda",
		regexp.MustCompile(`^\(anonymous namespace\)::sum_over<int>\(.*\)::\{lambda\(int\)#1\}::operator\(\)\(int\) const`),
		func(fr []Frame) bool { return hasFrame(fr, "__normal_iterator") },
	},
	{
		"count_matches's regex lambda",
		regexp.MustCompile(`^\(anonymous namespace\)::count_matches\(.*\)::\{lambda\(std::__cxx11::basic_string<.*> const&\)#1\}::operator\(\)\(.*\) const`),
		func(fr []Frame) bool { return hasFrame(fr, "std::__cxx11::match_results<") },
	},
	{
		"the lambda inside count_matches's second lambda",
		regexp.MustCompile(`^\(anonymous namespace\)::count_matches\(.*\)::\{lambda\(int\)#2\}::operator\(\)\(int\) const::\{lambda\(.*\)#1\}::operator\(\)\(.*\) const`),
		func(fr []Frame) bool { return hasFrame(fr, "std::count<") },
	},
	{
		"the local class's member function",
		regexp.MustCompile(`^\(anonymous namespace\)::lengths\(.*\)::Measure::of\(.*\)`),
		func(fr []Frame) bool { return hasFrame(fr, "::push_back(") || hasFrame(fr, "std::sort<") },
	},
}

func hasFrame(fr []Frame, s string) bool {
	for _, f := range fr {
		if strings.Contains(f.Function, s) {
			return true
		}
	}
	return false
}

var objdumpInsn = regexp.MustCompile(`^\s+([0-9a-f]+):\t`)

// textInsns returns the address of every instruction objdump -d decodes
// in p's .text.
func textInsns(t *testing.T, p string) []uint64 {
	out := run(t, nil, "objdump", "-d", "-j", ".text", p)
	var addrs []uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := objdumpInsn.FindStringSubmatch(sc.Text()); m != nil {
			a, err := strconv.ParseUint(m[1], 16, 64)
			require.NoError(t, err)
			addrs = append(addrs, a)
		}
	}
	require.NoError(t, sc.Err())
	return addrs
}

// sameRefs reports whether two tools' answers name the same functions,
// files and lines.
func sameRefs(a, b []refFrame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if normFn(a[i].fn) != normFn(b[i].fn) || normFile(a[i].file) != normFile(b[i].file) || a[i].line != b[i].line {
			return false
		}
	}
	return true
}
