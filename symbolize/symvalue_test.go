package symbolize

import "testing"

// TestSymbolValue checks symbolValue, which reads .symtab and its strings
// in chunks, against a search of elf.File.Symbols on a Go program:
// go:func.*, every symbol's name (every 13th with small chunks) (the first symbol of that name wins, as
// in findGoFunc's earlier loop) and a name no symbol has, with the
// default chunks and with chunks of 100 bytes (the string table's and
// the symbols' then straddle many chunk boundaries).
func TestSymbolValue(t *testing.T) {
	p := buildGoProg(t)
	defer func(n int) { symChunk = n }(symChunk)
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
	for _, chunk := range []int{symChunk, 100} {
		symChunk = chunk
		names := []string{"go:func.*"}
		step := 1
		if chunk < 1000 {
			step = 13 // each look-up reads both sections in 100-byte chunks
		}
		for i := 0; i < len(syms); i += step {
			if syms[i].Name != "" {
				names = append(names, syms[i].Name)
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
		t.Logf("%s, chunks of %d: %d names checked among %d symbols", p, chunk, len(names), len(syms))
	}
}
