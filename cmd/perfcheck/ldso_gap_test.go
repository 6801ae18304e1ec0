package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/perfcheck/perfcheck/internal/fixtures"
)

// ld.so's frames in cshared-fp.data are named when its binary is found
// through perf's build-id cache or a debug directory, whose richest file
// is a separate debug file (objcopy --only-keep-debug: PT_LOAD segments
// with no file bytes, so file offsets cannot be mapped through it): the
// code file's program headers map the offset, the debug file names it.
// perf report (which finds the same debug file by build-id in
// /usr/lib/debug) names the leaf `access`: the names are compared.
func TestLdsoNamedThroughDebugFile(t *testing.T) {
	t.Parallel()
	const id = "7ebc65e52f2bbea498b4040fa92f7238377aaba9"
	const ldso = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	dbg := "/usr/lib/debug/.build-id/7e/" + id[2:] + ".debug"
	if _, err := os.Stat(dbg); err != nil {
		t.Skipf("ld.so's debug file is not installed (Debian: libc6-dbg): %v", err)
	}
	if out, _, _ := ckRun(t, "buildid", "--json", ldso); !json.Valid([]byte(out)) || !strings.Contains(out, id) {
		t.Skipf("this machine's ld.so is not the recorded one (%s)", id)
	}
	data := ckFixture(t, "cshared-fp.data")
	symfs := ckSymfs(t)

	// perf's cache as perf 6.1 lays it out: PATH/ID/{elf,debug} and the
	// .build-id/xx/rest link to that directory.
	cache := t.TempDir()
	entry := filepath.Join(cache, ldso, id)
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	fixtures.CopyFile(t, ldso, filepath.Join(entry, "elf"))
	fixtures.CopyFile(t, dbg, filepath.Join(entry, "debug"))
	link := filepath.Join(cache, ".build-id", id[:2], id[2:])
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", ldso, id), link); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name   string
		flags  []string
		source string
	}{
		{"perf-cache", []string{"--buildid-dir", cache, "--debug-dir", t.TempDir()}, "perf-cache"},
		{"debug-dir", []string{"--buildid-dir", t.TempDir(), "--debug-dir", "/usr/lib/debug"}, "debug-dir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"top", "--json", "-n", "0", "--symfs", symfs, "--debuginfod", "none"}, c.flags...)
			out, errs, code := ckRun(t, append(args, data)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var top topJSON
			if err := json.Unmarshal([]byte(out), &top); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range top.Events[0].Entries {
				if e.DSO == ldso {
					names = append(names, e.Name)
				}
			}
			if len(names) != 1 || (names[0] != "access" && names[0] != "__access") {
				t.Errorf("ld.so entries %q; want its leaf named access", names)
			}
			if want := perfLdsoNames(t, data, symfs); !slices.Equal(names, want) {
				t.Errorf("ld.so entries %q; perf report names %q", names, want)
			}
			chk, _, _ := ckRun(t, append(append([]string{"check", "--json", "--symfs", symfs, "--debuginfod", "none"}, c.flags...), data)...)
			var rep ckReport
			if err := json.Unmarshal([]byte(chk), &rep); err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.DSOs {
				if d.Path == ldso && (d.Verdict != "verified" || d.Source != c.source) {
					t.Errorf("ld.so: %s via %s; want verified via %s", d.Verdict, d.Source, c.source)
				}
			}
		})
	}
}

// perfLdsoNames runs perf report --no-children --sort dso,sym on data and
// returns the names of the entries of ld.so (the leaves perf shows in it).
func perfLdsoNames(t *testing.T, data, symfs string) []string {
	t.Helper()
	needPerf(t)
	out := perfOut(t, "report", "--no-children", "--stdio", "-g", "none", "--sort", "dso,sym", "--symfs", symfs, "-i", data)
	line := regexp.MustCompile(`^\s+[0-9.]+%\s+(\S+)\s+\[.\]\s+(\S.*?)\s*$`)
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if m := line.FindStringSubmatch(l); m != nil && strings.HasPrefix(m[1], "ld-linux") {
			names = append(names, m[2])
		}
	}
	if len(names) == 0 {
		t.Fatalf("perf report shows no ld.so entry:\n%s", out)
	}
	return names
}
