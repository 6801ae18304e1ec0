package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// corruptDWARFSymfs is a --symfs root like fixtures.SymFS in which the
// fixtures' programs are copies, cshared's first DWARF unit made unreadable
// (version 0xffff) after the recording: its build-id note is intact, so it
// is still the binary that ran, and its symbolizer warns that it has no
// file:line. It returns the root and the warning's DSO path.
func corruptDWARFSymfs(t *testing.T) (string, string) {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, recordedBin)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(fixtures.Dir(), "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		src := filepath.Join(fixtures.Dir(), "bin", e.Name())
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "cshared" {
			var ok bool
			if b, ok = fixtures.CorruptDWARF(t, src); !ok {
				t.Fatal("cshared has no uncompressed .debug_info")
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"usr", "lib", "lib64"} {
		if _, err := os.Stat("/" + d); err == nil {
			if err := os.Symlink("/"+d, filepath.Join(root, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root, filepath.Join(recordedBin, "cshared")
}

// The DSO notes `perfcheck check` prints (here: a symbolizer warning about
// a verified binary's unreadable DWARF) are also said by top (text and
// JSON), script (stderr, so stdout keeps perf script's shape) and pprof
// (the profile's comments and its JSON), once each.
func TestNotesInEveryAnalysingCommand(t *testing.T) {
	t.Parallel()
	root, bin := corruptDWARFSymfs(t)
	data := ckFixture(t, "cshared-fp.data")
	flags := append([]string{"--symfs", root}, ckHermetic(t)...)
	isNote := func(s string) bool {
		return strings.HasPrefix(s, bin+": symbols: ") && strings.Contains(s, "DWARF")
	}
	count := func(lines []string, prefix string) int {
		n := 0
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, prefix); ok && isNote(rest) {
				n++
			}
		}
		return n
	}

	// The intact tree gives no note: the notes below come from the damage.
	out, errs, code := ckRun(t, append(append([]string{"top"}, flags[2:]...), "--symfs", fixtures.SymFS(t), data)...)
	if code != exitOK || strings.Contains(out, "note:") {
		t.Fatalf("top on intact binaries: exit %d, notes in\n%s%s", code, out, errs)
	}

	out, errs, code = ckRun(t, append(append([]string{"top"}, flags...), data)...)
	if code != exitOK || count(strings.Split(out, "\n"), "note: ") != 1 {
		t.Errorf("top: exit %d, want one note about %s's DWARF in\n%s%s", code, bin, out, errs)
	}
	if !strings.Contains(out, "first_hot") && !strings.Contains(out, "main") {
		t.Errorf("top: the verified binary's functions are not named from its symbol table:\n%s", out)
	}

	out, errs, code = ckRun(t, append(append([]string{"top", "--json"}, flags...), data)...)
	var tj topJSON
	if err := json.Unmarshal([]byte(out), &tj); code != exitOK || err != nil || count(tj.Notes, "") != 1 {
		t.Errorf("top --json: exit %d, %v, notes %q%s", code, err, tj.Notes, errs)
	}

	out, errs, code = ckRun(t, append(append([]string{"script"}, flags...), data)...)
	if code != exitOK || count(strings.Split(errs, "\n"), "perfcheck script: note: ") != 1 || strings.Contains(out, "note:") {
		t.Errorf("script: exit %d, want the note once on stderr only; stderr:\n%s", code, errs)
	}

	pb := filepath.Join(t.TempDir(), "out.pb.gz")
	out, errs, code = ckRun(t, append(append([]string{"pprof", "--json", "-o", pb}, flags...), data)...)
	var pj pprofJSON
	if err := json.Unmarshal([]byte(out), &pj); code != exitOK || err != nil || count(pj.Notes, "") != 1 {
		t.Errorf("pprof --json: exit %d, %v, notes %q%s", code, err, pj.Notes, errs)
	}
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if count(p.Comments, "note: ") != 1 {
		t.Errorf("pprof comments %q: want the note once", p.Comments)
	}
}
