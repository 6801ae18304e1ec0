package symbolize

import "testing"

// TestSymbolValue checks symbolValue, which reads .symtab and its strings
// itself, against a search of elf.File.Symbols on a Go program:
// go:func.*, every symbol's name (the first symbol of that name wins, as
// in findGoFunc's earlier loop) and a name no symbol has.
func TestSymbolValue(t *testing.T) {
	t.Parallel()
	p := buildGoProg(t)
	ef, syms := elfSymbols(t, p)
	first := map[string]uint64{}
	for _, s := range syms {
		if _, ok := first[s.Name]; !ok {
			first[s.Name] = s.Value
		}
	}
	if _, ok := first["go:func.*"]; !ok {
		t.Fatalf("%s: no go:func.* symbol: the test would miss findGoFunc's case", p)
	}
	names := []string{"go:func.*"}
	for _, s := range syms {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	for _, n := range names {
		v, ok := symbolValue(ef, n)
		if !ok || v != first[n] {
			t.Errorf("%s: symbolValue(%q) = %#x, %v; want %#x", p, n, v, ok, first[n])
		}
	}
	if v, ok := symbolValue(ef, "no such symbol, surely"); ok {
		t.Errorf("%s: symbolValue of a missing name = %#x, true", p, v)
	}
	t.Logf("%s: %d names checked among %d symbols", p, len(names), len(syms))
}
