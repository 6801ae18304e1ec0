package symbolize

import "strings"

// This file finds the empty identifiers of a Rust v0 symbol name
// (https://doc.rust-lang.org/rustc/symbol-mangling/v0.html). Their length
// is the <decimal-number> "0", which the grammar reads as a whole number
// ("0" | <[1-9]> {<[0-9]>}); github.com/ianlancetaylor/demangle reads the
// digits greedily, so an empty identifier followed by a digit ("00", the
// closures of a closure; "011FIRST_PANIC") is read as another number and
// the rest of the name shifts. rustV0Disambiguate rewrites each such "0"
// into "_", which the demangler reads as an empty number followed by the
// optional "_" separator: the same identifier, at the same length, so
// that back-references (byte offsets into the name) still point where
// they did.
//
// The scanner follows the grammar the demangler implements, without
// printing and without following back-references (they only point back
// into text already scanned).

// maxV0Depth bounds the nesting the scanner follows; names deeper than any
// compiler writes are left to be printed raw.
const maxV0Depth = 256

// v0Scan is a scanner over a v0 name without its "_R" prefix and suffix.
type v0Scan struct {
	s     string
	i     int
	ok    bool
	depth int
	zeros []int // offsets of the "0" lengths followed by a digit
}

// rustV0Disambiguate returns name (a v0 name, "_R…", with an optional
// ".suffix") with every empty identifier's length that is followed by a
// digit written as "_"; false when name does not scan as a v0 name.
func rustV0Disambiguate(name string) (string, bool) {
	body := name[2:]
	if i := strings.IndexByte(body, '.'); i >= 0 {
		body = body[:i]
	}
	sc := &v0Scan{s: body, ok: true}
	sc.path()
	if sc.ok && sc.i < len(sc.s) {
		sc.path() // the instantiating crate
	}
	if !sc.ok || sc.i != len(sc.s) {
		return name, false
	}
	if len(sc.zeros) == 0 {
		return name, true
	}
	b := []byte(name)
	for _, z := range sc.zeros {
		b[2+z] = '_'
	}
	return string(b), true
}

func (sc *v0Scan) peek() byte {
	if !sc.ok || sc.i >= len(sc.s) {
		return 0
	}
	return sc.s[sc.i]
}

// eat consumes c when it is next.
func (sc *v0Scan) eat(c byte) bool {
	if sc.peek() == c && c != 0 {
		sc.i++
		return true
	}
	return false
}

func (sc *v0Scan) expect(c byte) {
	if !sc.eat(c) {
		sc.ok = false
	}
}

// enter counts one level of nesting; false (and the scan failed) past
// maxV0Depth.
func (sc *v0Scan) enter() bool {
	sc.depth++
	if sc.depth > maxV0Depth {
		sc.ok = false
	}
	return sc.ok
}

func (sc *v0Scan) path() {
	if !sc.enter() {
		return
	}
	defer func() { sc.depth-- }()
	c := sc.peek()
	sc.i++
	switch c {
	case 'C':
		sc.identifier()
	case 'M':
		sc.disambiguator()
		sc.path()
		sc.typ()
	case 'X':
		sc.disambiguator()
		sc.path()
		sc.typ()
		sc.path()
	case 'Y':
		sc.typ()
		sc.path()
	case 'N':
		if ns := sc.peek(); !(ns >= 'a' && ns <= 'z' || ns >= 'A' && ns <= 'Z') {
			sc.ok = false
			return
		}
		sc.i++
		sc.path()
		sc.identifier()
	case 'I':
		sc.path()
		sc.genericArgs()
		sc.expect('E')
	case 'B':
		sc.base62()
	default:
		sc.ok = false
	}
}

func (sc *v0Scan) identifier() {
	sc.disambiguator()
	sc.undisambiguated()
}

func (sc *v0Scan) disambiguator() {
	if sc.eat('s') {
		sc.base62()
	}
}

// undisambiguated scans ["u"] <decimal-number> ["_"] <bytes>.
func (sc *v0Scan) undisambiguated() {
	sc.eat('u')
	c := sc.peek()
	n := 0
	switch {
	case c == '0':
		if sc.i+1 < len(sc.s) && isDigit(sc.s[sc.i+1]) {
			sc.zeros = append(sc.zeros, sc.i)
		}
		sc.i++
	case c >= '1' && c <= '9':
		for isDigit(sc.peek()) {
			n = n*10 + int(sc.s[sc.i]-'0')
			if n > len(sc.s) {
				sc.ok = false
				return
			}
			sc.i++
		}
	default:
		sc.ok = false
		return
	}
	sc.eat('_')
	if n > len(sc.s)-sc.i {
		sc.ok = false
		return
	}
	sc.i += n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// base62 scans {<0-9a-zA-Z>} "_".
func (sc *v0Scan) base62() {
	for {
		c := sc.peek()
		switch {
		case c == '_':
			sc.i++
			return
		case isDigit(c), c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			sc.i++
		default:
			sc.ok = false
			return
		}
	}
}

func (sc *v0Scan) genericArgs() {
	for sc.ok && sc.peek() != 'E' && sc.peek() != 0 {
		switch {
		case sc.eat('L'):
			sc.base62()
		case sc.eat('K'):
			sc.constant()
		default:
			sc.typ()
		}
	}
}

// basicTypes are the one-letter types of the v0 grammar.
const basicTypes = "abcdefhijlmnopstuvxyz"

func (sc *v0Scan) typ() {
	if !sc.enter() {
		return
	}
	defer func() { sc.depth-- }()
	c := sc.peek()
	if c >= 'a' && c <= 'z' {
		if strings.IndexByte(basicTypes, c) < 0 {
			sc.ok = false
		}
		sc.i++
		return
	}
	switch c {
	case 'C', 'M', 'X', 'Y', 'N', 'I':
		sc.path()
		return
	}
	sc.i++
	switch c {
	case 'A':
		sc.typ()
		sc.constant()
	case 'S', 'P', 'O':
		sc.typ()
	case 'T':
		for sc.ok && sc.peek() != 'E' && sc.peek() != 0 {
			sc.typ()
		}
		sc.expect('E')
	case 'R', 'Q':
		if sc.eat('L') {
			sc.base62()
		}
		sc.typ()
	case 'F':
		sc.fnSig()
	case 'D':
		sc.dynBounds()
		sc.expect('L')
		sc.base62()
	case 'B':
		sc.base62()
	default:
		sc.ok = false
	}
}

func (sc *v0Scan) binder() {
	if sc.eat('G') {
		sc.base62()
	}
}

func (sc *v0Scan) fnSig() {
	sc.binder()
	sc.eat('U')
	if sc.eat('K') && !sc.eat('C') {
		sc.undisambiguated()
	}
	for sc.ok && sc.peek() != 'E' && sc.peek() != 0 {
		sc.typ()
	}
	sc.expect('E')
	if !sc.eat('u') {
		sc.typ()
	}
}

func (sc *v0Scan) dynBounds() {
	sc.binder()
	for sc.ok && sc.peek() != 'E' && sc.peek() != 0 {
		// <dyn-trait> = <path> {"p" <undisambiguated-identifier> <type>}
		if sc.eat('I') {
			sc.path()
			sc.genericArgs()
			sc.expect('E')
		} else {
			sc.path()
		}
		for sc.eat('p') {
			sc.undisambiguated()
			sc.typ()
		}
	}
	sc.expect('E')
}

// constant scans the constants the demangler prints: a back-reference,
// the placeholder "p", or an integer, bool or char as hex digits.
func (sc *v0Scan) constant() {
	switch c := sc.peek(); {
	case c == 'B':
		sc.i++
		sc.base62()
		return
	case c == 'p':
		sc.i++
		return
	case c == 0 || strings.IndexByte("aslxnihtmyojbc", c) < 0:
		sc.ok = false
		return
	case strings.IndexByte("aslxni", c) >= 0:
		sc.i++
		sc.eat('n')
	default:
		sc.i++
	}
	for {
		c := sc.peek()
		switch {
		case c == '_':
			sc.i++
			return
		case isDigit(c), c >= 'a' && c <= 'f':
			sc.i++
		default:
			sc.ok = false
			return
		}
	}
}
