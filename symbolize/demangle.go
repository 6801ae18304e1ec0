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
//
// Two defects of github.com/ianlancetaylor/demangle are worked around so
// that a demangled name is never a wrong one:
//   - an empty template parameter pack expanded after other arguments
//     (std::_Tuple_impl<0ul, T&&, DpT1_> with T1_ empty) printed as
//     "<0ul, T&&, >"; the empty element is dropped, as c++filt prints it;
//   - a Rust v0 <decimal-number> is read greedily, so an empty identifier
//     "0" followed by a digit ("00", "011": the closures of a closure) is
//     read as one number and the rest of the name shifts. Such names are
//     scanned first (rustv0.go) and each empty identifier's "0" is
//     written as "_", which the demangler reads right; a name that does
//     not scan is returned raw. See docs/symbolize.md.
func Demangle(name string) string {
	if !mangled(name) {
		return name
	}
	base, suffix := name, ""
	if i := strings.IndexByte(name, '@'); i > 0 {
		base, suffix = name[:i], name[i:]
	}
	if strings.HasPrefix(base, "_R") && rustV0Ambiguous(base) {
		var ok bool
		if base, ok = rustV0Disambiguate(base); !ok {
			return name
		}
	}
	var d string
	if strings.HasPrefix(base, "_Z") && !rustLegacy(base) {
		a, err := demangle.ToAST(base, demangle.MaxLength(20))
		if err != nil {
			return name
		}
		d = demangle.ASTToString(dropEmptyPackElems(a), demangle.MaxLength(20))
	} else {
		var err error
		d, err = demangle.ToString(base, demangle.MaxLength(20))
		if err != nil {
			return name
		}
	}
	return d + suffix
}

// rustLegacy reports whether an _ZN name is a Rust legacy one (it ends in
// 17h and 16 hex digits, then E, before any ".suffix"); those go through
// demangle.ToString, which knows them.
func rustLegacy(name string) bool {
	if !strings.HasPrefix(name, "_ZN") {
		return false
	}
	if i := strings.LastIndex(name, "E."); i > 0 {
		name = name[:i+1]
	}
	return strings.HasSuffix(name, "E") && len(name) > 23 && name[len(name)-20:len(name)-17] == "17h"
}

// rustV0Ambiguous reports whether a Rust v0 name holds a '0' followed by a
// digit, where the demangler may read an empty identifier and the next
// number as one <decimal-number> (the v0 grammar allows no leading zero).
func rustV0Ambiguous(name string) bool {
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '0' && name[i+1] >= '0' && name[i+1] <= '9' {
			return true
		}
	}
	return false
}

// dropEmptyPackElems removes, from every argument pack, the elements that
// print as nothing (an expanded empty pack), which demangle prints as an
// empty element between commas.
func dropEmptyPackElems(a demangle.AST) demangle.AST {
	c := a.Copy(func(n demangle.AST) demangle.AST {
		ap, ok := n.(*demangle.ArgumentPack)
		if !ok {
			return nil
		}
		keep := make([]demangle.AST, 0, len(ap.Args))
		for _, x := range ap.Args {
			if !emptyPackElem(x) {
				keep = append(keep, x)
			}
		}
		if len(keep) == len(ap.Args) {
			return nil
		}
		return &demangle.ArgumentPack{Args: keep}
	}, func(demangle.AST) bool { return false })
	if c == nil {
		return a
	}
	return c
}

func emptyPackElem(a demangle.AST) bool {
	switch a := a.(type) {
	case *demangle.ExprList:
		return len(a.Exprs) == 0
	case *demangle.ArgumentPack:
		for _, x := range a.Args {
			if !emptyPackElem(x) {
				return false
			}
		}
		return true
	}
	return false
}

// mangled reports whether name may be an Itanium C++ or Rust name, so that
// C and Go names skip the demangler and its cache.
func mangled(name string) bool {
	return strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R") || strings.HasPrefix(name, "__Z")
}
