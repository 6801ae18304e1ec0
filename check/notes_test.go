package check

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// A JIT that writes a malformed line into its perf map (a half-written
// line, as when perf reads a map a live JIT is appending to): its code is
// still named from the good lines, and the JIT DSO's notes say what was
// skipped — in the Result, the Report and its JSON, whether the check
// symbolizes or not (perfcheck check does not).
func TestRealPerfMapWarningNote(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := strings.Replace(jitSrc, `fprintf(f, "%lx %zx jit_hot_fn\n"`,
		`fprintf(f, "zz12 nothex half_written\n"); fprintf(f, "%lx %zx jit_hot_fn\n"`, 1)
	if src == jitSrc {
		t.Fatal("jitSrc changed: the malformed line was not added")
	}
	data, mapFile, _ := w.recordJIT("jitbad", src)
	for _, noSymbols := range []bool{false, true} {
		res := w.analyze(data, Options{NoSymbols: noSymbols})
		d := mustDSO(t, res, mapFile, Unverified)
		if !noSymbols {
			assertName(t, res, "jit_hot_fn")
		}
		want := "symbols: " + mapFile + ": 1 malformed perf map line(s) skipped, the first at offset 0"
		if len(d.Notes) != 1 || d.Notes[0] != want {
			t.Errorf("NoSymbols %v: JIT notes %q, want [%q]", noSymbols, d.Notes, want)
		}
		b, err := json.Marshal(res.Report())
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			DSOs []struct {
				Path  string   `json:"path"`
				Notes []string `json:"notes"`
			} `json:"dsos"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rep.DSOs {
			if r.Path == mapFile {
				found = len(r.Notes) == 1 && r.Notes[0] == want
			} else if len(r.Notes) != 0 {
				t.Errorf("NoSymbols %v: %s has notes %q", noSymbols, r.Path, r.Notes)
			}
		}
		if !found {
			t.Errorf("NoSymbols %v: the JSON report does not carry the JIT note: %s", noSymbols, b)
		}
	}
}

// A verified binary whose DWARF is corrupt after the recording (the
// build-id note is intact, so it is still the binary that ran): its frames
// are named from the symbol table, and the DSO's notes say once why they
// have no file:line, though many locations were looked up.
func TestRealCorruptDWARFNote(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bin := w.path("busy")
	w.gcc(bin, busyV1)
	// DWARF version 0xffff in the first unit's header: debug/dwarf
	// refuses the section (as symbolize's TestWarningsCorruptDWARF). It is
	// written over the binary after the recording.
	bad, ok := fixtures.CorruptDWARF(t, bin)
	if !ok {
		t.Skip("gcc here gives no uncompressed .debug_info")
	}
	data := w.record("busy.data", nil, bin)
	clean := w.analyze(data, Options{})
	mustDSO(t, clean, bin, Verified)
	for _, d := range clean.DSOs {
		if len(d.Notes) != 0 {
			t.Errorf("intact binaries: %s has notes %q", d.Path, d.Notes)
		}
	}
	if err := os.WriteFile(bin, bad, 0o755); err != nil {
		t.Fatal(err)
	}
	res := w.analyze(data, Options{})
	d := mustDSO(t, res, bin, Verified)
	assertName(t, res, "first_hot")
	locs := 0
	for _, l := range res.Locations {
		if l.DSO == d {
			locs++
			for _, f := range l.Frames {
				if f.Line != 0 {
					t.Errorf("%s+%#x: line %d from a refused DWARF", bin, l.Offset, f.Line)
				}
			}
		}
	}
	if locs < 2 || len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], "symbols: ") ||
		!strings.Contains(d.Notes[0], bin) || !strings.Contains(d.Notes[0], "DWARF") {
		t.Errorf("%d locations; notes %q, want one naming %s and DWARF", locs, d.Notes, bin)
	}
	// perfcheck check does not symbolize, and opens no binary for notes.
	if res := w.analyze(data, Options{NoSymbols: true}); len(mustDSO(t, res, bin, Verified).Notes) != 0 {
		t.Errorf("NoSymbols: notes %q", mustDSO(t, res, bin, Verified).Notes)
	}
}
