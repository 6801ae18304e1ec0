package symbolize

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDebugFileWithoutBuildIDRefused offers a stripped binary that has a
// build-id and no debuglink a debug file of the same program without a
// build-id note: nothing ties it to the binary, so it is refused and its
// DWARF is not used.
func TestDebugFileWithoutBuildIDRefused(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc")
	needTool(t, "objcopy")
	dir := t.TempDir()
	p := compile(t, dir, "prog", "gcc", testdataPath(t, "prog.c"), "-O2", "-g", "-Wl,--build-id")
	dbg := p + ".debug"
	for _, args := range [][]string{
		{"--only-keep-debug", "--remove-section", ".note.gnu.build-id", p, dbg},
		{"--strip-debug", p},
	} {
		if o, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, o)
		}
	}
	b, err := Open(p, Options{DebugFile: func(DebugQuery) (string, error) { return dbg, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.BuildID()) == 0 {
		t.Fatal("the binary has no build-id")
	}
	if got := b.DebugFile(); got != "" {
		t.Errorf("DebugFile() = %q, want none", got)
	}
	w := b.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], dbg) || !strings.Contains(w[0], "no build-id") {
		t.Errorf("Warnings() = %q, want the refused %s named", w, dbg)
	}
}
