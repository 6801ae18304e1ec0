package symbolize

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ianlancetaylor/demangle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filt runs a demangler tool on name, skipping the test when it is absent.
func filt(t *testing.T, tool, name string) string {
	t.Helper()
	needTool(t, tool)
	out, err := exec.Command(tool, name).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", tool, name, err)
	}
	return strings.TrimSpace(string(out))
}

// TestDemangleCPlusPlus compares Demangle with c++filt (libiberty, what
// addr2line -C and perf print) on names taken from g++ binaries, exactly.
func TestDemangleCPlusPlus(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"_Z3fooi",
		"_ZN3foo3barEv",
		"_ZNKSt6vectorIdSaIdEE4sizeEv",
		// An empty template parameter pack expanded after another
		// argument (std::get on a one-element tuple): the library
		// alone prints "_Tuple_impl<0ul, ...&&, >".
		"_ZSt12__get_helperILm0EONSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEJEERT0_RSt11_Tuple_implIXT_EJS7_DpT1_EE",
		"_ZSt12__get_helperILm0EJiEERT0_RSt11_Tuple_implIXT_EJS0_DpT1_EE",
		// A lambda, and a clone suffix.
		"_ZN9__gnu_cxx5__ops14_Iter_comp_valIZ4mainEUlddE_EC2EONS0_15_Iter_comp_iterIS2_EE",
		"_ZSt16__insertion_sortIN9__gnu_cxx17__normal_iteratorIPdSt6vectorIdSaIdEEEENS0_5__ops15_Iter_comp_iterIZ4mainEUlddE_EEEvT_SB_T0_.constprop.0",
		"_ZNSt8_Rb_treeINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt4pairIKS5_iESt10_Select1stIS8_ESt4lessIS5_ESaIS8_EE8_M_eraseEPSt13_Rb_tree_nodeIS8_E.isra.0",
	} {
		want := filt(t, "c++filt", name)
		if got := Demangle(name); got != want {
			t.Errorf("Demangle(%s)\n got  %s\n want %s (c++filt)", name, got, want)
		}
	}
	// The suffix of a PLT or versioned name is kept.
	if got, want := Demangle("_Z3fooi@plt"), "foo(int)@plt"; got != want {
		t.Errorf("Demangle(_Z3fooi@plt) = %q, want %q", got, want)
	}
	// Not mangled, or not valid: returned unchanged.
	for _, name := range []string{"main", "runtime.main", "_Zjunk", "_Rjunk"} {
		if got := Demangle(name); got != name {
			t.Errorf("Demangle(%q) = %q, want it unchanged", name, got)
		}
	}
}

// TestDemangleRust compares Demangle with llvm-cxxfilt (and c++filt, whose
// v0 output adds [crate-hash] suffixes) on Rust legacy and v0 names from
// rustc 1.x binaries, v0 closures of closures included, whose empty
// identifiers the library alone misreads.
func TestDemangleRust(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		// legacy
		"_ZN4prog4main17hcce186249aee5b82E",
		"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h612b7d111904d179E",
		"_ZN71_$LT$core..hash..sip..Hasher$LT$S$GT$$u20$as$u20$core..hash..Hasher$GT$5write17h9078338d160f2adfE",
		"_ZN4core3ptr35drop_in_place$LT$std..env..Args$GT$17h719caea2e933e88aE",
		// v0
		"_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal",
		"_RNCNCNvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace10__print_fmts_00B9_",
		"_RNvMs2_NtNtCsgEmfK2I1SDS_4core3num6bignumNtB5_8Big32x408mul_pow2",
		"_RNvNtCsgY6Mt91CT9J_14rustc_demangle2v010basic_type",
		"_RNvNCNvNtCsjrHSEGnQ3l9_3std9panicking12default_hook011FIRST_PANIC",
		"_RNvNCNKNvNtNtCsjrHSEGnQ3l9_3std2io5stdio14OUTPUT_CAPTURE0023___RUST_STD_INTERNAL_VAL",
	} {
		want := filt(t, "llvm-cxxfilt", name)
		if strings.HasPrefix(name, "_ZN") {
			// c++filt decodes the $u7b$ escapes that
			// llvm-cxxfilt leaves; both keep the ::h<hash>,
			// which we drop as the library does and as
			// addr2line -C prints names from DWARF.
			want = rustHash.ReplaceAllString(filt(t, "c++filt", name), "")
		}
		if got := Demangle(name); got != want {
			t.Errorf("Demangle(%s)\n got  %s\n want %s", name, got, want)
		}
	}
	// Names the library alone demangles wrongly (empty identifiers
	// followed by a digit): Demangle must give llvm-cxxfilt's text.
	for _, name := range []string{
		"_RNCNCNCNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal00s_0B9_",
		"_RNCINvNtNtCsjrHSEGnQ3l9_3std6thread7current17with_current_nameNCNCNvNtB8_9panicking12default_hook00uE0B8_",
	} {
		correct := filt(t, "llvm-cxxfilt", name)
		lib, _ := demangle.ToString(name)
		if lib == correct {
			t.Errorf("%s: the library now demangles it right (%s): drop rustV0Disambiguate", name, lib)
		}
		if got := Demangle(name); got != correct {
			t.Errorf("Demangle(%s)\n got  %s\n want %s (llvm-cxxfilt)", name, got, correct)
		}
	}
	// Names that do not scan as v0 stay raw, whatever the library makes
	// of them.
	for _, name := range []string{"_RNvC00x", "_RNvC3foo01", "_RNvCs_00Z"} {
		require.True(t, rustV0Ambiguous(name))
		if got := Demangle(name); got != name {
			t.Errorf("Demangle(%s) = %s, want it raw", name, got)
		}
	}
}

// TestDemangleRustBinary demangles every v0 symbol of a Rust program built
// here (closures in closures, generic and trait impls, dyn, arrays, consts)
// and compares with llvm-cxxfilt, which knows v0, name for name.
func TestDemangleRustBinary(t *testing.T) {
	t.Parallel()
	rustc := "/root/.cargo/bin/rustc"
	if _, err := os.Stat(rustc); err != nil {
		if rustc, err = exec.LookPath("rustc"); err != nil {
			t.Skip("rustc not installed")
		}
	}
	needTool(t, "llvm-cxxfilt")
	bin := filepath.Join(t.TempDir(), "v0")
	out, err := exec.Command(rustc, "-C", "symbol-mangling-version=v0", "-C", "opt-level=1",
		"-o", bin, testdataPath(t, "v0.rs")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	ef, err := elf.Open(bin)
	require.NoError(t, err)
	syms, err := ef.Symbols()
	ef.Close()
	require.NoError(t, err)
	var names []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "_R") {
			names = append(names, s.Name)
		}
	}
	cmd := exec.Command("llvm-cxxfilt")
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	filtered, err := cmd.Output()
	require.NoError(t, err)
	want := strings.Split(strings.TrimSuffix(string(filtered), "\n"), "\n")
	require.Len(t, want, len(names))
	ambiguous := 0
	for i, name := range names {
		if rustV0Ambiguous(name) {
			ambiguous++
		}
		// llvm-cxxfilt prints a ".llvm.N" or ".0" suffix as " (.N)";
		// the library drops it.
		w, _, _ := strings.Cut(want[i], " (.")
		assert.Equal(t, w, Demangle(name), name)
	}
	require.Greater(t, ambiguous, 3, "the program must have closures of closures")
}

// TestNoDemangleOption checks Options.NoDemangle on a real C++ binary: the
// same lookups, with Function equal to the mangled RawName, where the
// default demangles it.
func TestNoDemangleOption(t *testing.T) {
	t.Parallel()
	needTool(t, "g++")
	dir := t.TempDir()
	p := compile(t, dir, "cxx", "g++", testdataPath(t, "prog.cc"), "-O0", "-g")
	tb := openTestBinary(t, p)
	on, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	off, err := Open(p, Options{NoDemangle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	n := 0
	for _, s := range tb.syms {
		if !strings.HasPrefix(s.Name, "_Z") || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 {
			continue
		}
		a, err1 := on.Frames(s.Value, nil)
		b, err2 := off.Frames(s.Value, nil)
		if err1 != nil || err2 != nil || len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%#x: %v %v, %v %v", s.Value, fmtOurs(a), err1, fmtOurs(b), err2)
		}
		for i := range b {
			if b[i].Function != b[i].RawName || b[i].RawName != a[i].RawName {
				t.Errorf("%#x: NoDemangle frame %+v, default %+v", s.Value, b[i], a[i])
			}
			if strings.HasPrefix(a[i].RawName, "_Z") && a[i].Function == a[i].RawName {
				t.Errorf("%#x: default left %s mangled", s.Value, a[i].RawName)
			}
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d C++ functions checked", n)
	}
}
