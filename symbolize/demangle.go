package symbolize

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// demangle returns the display name for raw, caching the result so that a
// steady-state lookup does not allocate.
func (b *Binary) demangle(raw string) string {
	if b.opts.NoDemangle || !mangled(raw) {
		return raw
	}
	if v, ok := b.demangleCache.Load(raw); ok {
		return v.(string)
	}
	d := Demangle(raw)
	b.demangleCache.Store(raw, d)
	return d
}

// Demangle returns the demangled form of a C++ (Itanium ABI) or Rust
// (legacy or v0) symbol name, and name itself for anything else (C, Go).
// A versioned ELF name ("memcpy@GLIBC_2.14") and a PLT name ("_Z3fooi@plt")
// keep their suffix after the demangled part. Rust legacy names lose their
// trailing hash (::h0123456789abcdef), as addr2line -C prints them.
func Demangle(name string) string {
	if !mangled(name) {
		return name
	}
	base, suffix := name, ""
	if i := strings.IndexByte(name, '@'); i > 0 {
		base, suffix = name[:i], name[i:]
	}
	d, err := demangle.ToString(base, demangle.MaxLength(20))
	if err != nil {
		return name
	}
	return d + suffix
}

// mangled reports whether name may be an Itanium C++ or Rust name, so that
// C and Go names skip the demangler and its cache.
func mangled(name string) bool {
	return strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R") || strings.HasPrefix(name, "__Z")
}
