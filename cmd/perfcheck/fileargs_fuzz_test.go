package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzFileCommands runs info, stats and buildids (and -H) on arbitrary
// bytes, seeded with the fixtures: whatever the input, they must not panic
// and must exit 0 or 2. (The record decoding itself is fuzzed in
// perfdata; this covers what the commands build on top: the counts, the
// DSO model, the JSON.)
func FuzzFileCommands(f *testing.F) {
	m, _ := filepath.Glob(filepath.Join(fixturesDir, "*.data"))
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "in.data")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"info", "--json", file}, {"stats", file}, {"buildids", file}, {"buildids", "-H", "--json", file}} {
			if _, _, code := runCmd(t, args...); code != exitOK && code != exitError {
				t.Fatalf("%v: exit %d", args, code)
			}
		}
	})
}
