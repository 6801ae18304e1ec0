package symbolize

import (
	"debug/dwarf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// TestDIEReader walks every unit of real binaries with dieReader and with
// debug/dwarf's Reader in step and checks that the reader gives, for every
// DIE, the offset, tag, children flag and kept attributes dieFromEntry
// takes from debug/dwarf's entry, that the ranges rangeLists reads are
// Data.Ranges' own, and that skipChildren lands where SkipChildren does.
// The binaries cover DWARF 5 (Go; gcc's default, with strx, addrx,
// rnglistx and line_strp forms) and DWARF 4 (.debug_ranges, strp), and
// the test checks it met entries with DW_AT_ranges and skipped children.
func TestDIEReader(t *testing.T) {
	t.Parallel()
	gcc := needTool(t, "gcc")
	dir := t.TempDir()
	bins := map[string]string{
		"go":              buildGoProg(t),
		"gcc dwarf 5":     compile(t, dir, "prog5", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-5"),
		"gcc dwarf 4":     compile(t, dir, "prog4", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-4"),
		"gcc dwarf 4 -gz": compile(t, dir, "prog4z", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-4", "-gz=zlib"),
		"g++ dwarf 5":     compile(t, dir, "progcc5", needTool(t, "g++"), testdataPath(t, "prog.cc"), "-O2", "-g", "-gdwarf-5"),
		"g++ dwarf 4":     compile(t, dir, "progcc4", "g++", testdataPath(t, "prog.cc"), "-O2", "-g", "-gdwarf-4"),
		"gcc dwarf64":     compile(t, dir, "prog5z", gcc, testdataPath(t, "prog.c"), "-O2", "-g", "-gdwarf-5", "-gdwarf64"),
	}
	// A big-endian binary: Go cross-compiled for s390x.
	{
		dir := goProgDir(t)
		p := filepath.Join(dir, "goprog-s390x")
		if o, err := goBuildFor(needTool(t, "go"), dir, p, "s390x"); err != nil {
			t.Fatalf("go build for s390x: %v\n%s", err, o)
		}
		bins["go s390x (big-endian)"] = p
	}
	// LLVM's DWARF 5 (rustc's) has what gcc's lacks: DW_FORM_strx1,
	// addrx and rnglistx, read through DW_AT_str_offsets_base,
	// DW_AT_addr_base and DW_AT_rnglists_base.
	if rustc := rustcPath(); rustc != "" {
		p := filepath.Join(dir, "rust5")
		cmd := exec.Command(rustc, "-C", "opt-level=2", "-g", "-C", "dwarf-version=5", "-o", p, testdataPath(t, "prog.rs"))
		if o, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rustc: %v\n%s", err, o)
		}
		bins["rustc dwarf 5"] = p
	}
	for what, p := range bins {
		b := mustOpenOpts(t, p, Options{NoDebugFile: true})
		x := b.loadDWARF()
		if x == nil || !x.hasData || x.dies == nil {
			t.Fatalf("%s: no DWARF read by dieReader", what)
		}
		// Unlocked by a defer, so that a failing check (Fatalf exits
		// the goroutine) does not leave Close, run as a cleanup,
		// waiting on the lock.
		x.mu.Lock()
		unlock := sync.OnceFunc(x.mu.Unlock)
		defer unlock()
		lists, skips, dies := 0, 0, 0
		for u := range x.units {
			s := &x.units[u]
			rl := x.unitRanges(s.entry)
			var dr dieReader
			if err := x.dies.unitReader(s.entry, &dr); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			r := x.d.Reader()
			r.Seek(s.entry.Offset)
			for {
				e, err := r.Next()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if e == nil || (e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit) && e.Offset != s.entry.Offset {
					var d die
					if ok, err := dr.next(&d); ok || err != nil {
						t.Fatalf("%s: unit at %#x: dieReader goes on past the unit's end (%v)", what, s.entry.Offset, err)
					}
					break
				}
				var got, want die
				ok, err := dr.next(&got)
				if !ok || err != nil {
					t.Fatalf("%s: entry at %#x: dieReader ended (%v)", what, e.Offset, err)
				}
				dies++
				dieFromEntry(e, &want)
				want.own = false // debug/dwarf's strings are copies, the reader's views
				if e.Tag == 0 {
					want.off = got.off // debug/dwarf gives null entries offset 0
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: entry at %#x (%v):\n dieReader   %+v\n debug/dwarf %+v", what, e.Offset, e.Tag, got, want)
				}
				if e.Tag == 0 || e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
					continue
				}
				rs, err1 := rl.of(&got, nil)
				wrs, err2 := x.d.Ranges(e)
				if len(rs) == 0 {
					rs = nil
				}
				if len(wrs) == 0 {
					wrs = nil
				}
				if !reflect.DeepEqual(rs, wrs) || (err1 == nil) != (err2 == nil) {
					t.Fatalf("%s: entry at %#x (%v): ranges %v (%v), debug/dwarf %v (%v)", what, e.Offset, e.Tag, rs, err1, wrs, err2)
				}
				if e.AttrField(dwarf.AttrRanges) != nil && len(wrs) > 0 {
					lists++
				}
				// Every fourth DIE with children: skip them in
				// both and compare where the walks go on.
				if e.Children && dies%4 == 0 {
					skips++
					r.SkipChildren()
					if err := dr.skipChildren(&got); err != nil {
						t.Fatalf("%s: skipping the children of %#x: %v", what, e.Offset, err)
					}
				}
			}
		}
		unlock()
		if lists == 0 || skips == 0 {
			t.Errorf("%s: %d entries with DW_AT_ranges, %d children skipped: the test would not exercise both", what, lists, skips)
		}
		t.Logf("%s: %d DIEs, %d with range lists, %d skips", what, dies, lists, skips)
	}
}

// buildGoProg builds testdata/goprog (the Go linker compresses its DWARF
// with zlib, so the sections are decompressed into anonymous memory).
func buildGoProg(t *testing.T) string {
	t.Helper()
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	p := filepath.Join(dir, "goprog")
	if o, err := goBuild(gobin, dir, p); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
	return p
}

// rustcPath returns rustc's path, "" when it is not installed.
func rustcPath() string {
	if _, err := os.Stat("/root/.cargo/bin/rustc"); err == nil {
		return "/root/.cargo/bin/rustc"
	}
	p, _ := exec.LookPath("rustc")
	return p
}
