package symbolize

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"path"
	"strings"
	"unsafe"
)

// decodeUnit reads one unit's line table and its subprogram/inlined
// subroutine tree. Called with x.mu held.
func (x *dwarfIndex) decodeUnit(cu *dwarf.Entry, base uint64) (*unitInfo, error) {
	ui := &unitInfo{base: base}
	if lang, ok := cu.Val(dwarf.AttrLanguage).(int64); ok && lang == dwLangGo {
		ui.goUnit = true
	}
	var bld unitBuild
	callFiles, err := x.decodeUnitLines(cu, ui, &bld.lines)
	if err != nil {
		return nil, err
	}
	w := unitWalk{x: x, ui: ui, bld: &bld, base: base, callFiles: callFiles,
		nameIdx: map[string]uint32{}, viewIdx: map[viewKey]uint32{}, nameRoom: -1}
	if d := x.dies; d != nil {
		w.nameRoom = 2 * (len(d.info) + len(d.str) + len(d.lineStr))
	}
	if err := w.walk(cu); err != nil {
		return nil, err
	}
	if err := bld.indexKids(); err != nil {
		return nil, err
	}
	ui.fileTab = x.fileTab
	bld.finish(ui)
	ui.size = ui.bytes()
	return ui, nil
}

// decodeUnitLines reads the unit's line program into enc and returns the
// unit's file table as attributes (DW_AT_call_file) index it, mapped to
// the index's table of names.
func (x *dwarfIndex) decodeUnitLines(cu *dwarf.Entry, ui *unitInfo, enc *lineEncoder) ([]uint32, error) {
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	if off, ok := cu.Val(dwarf.AttrStmtList).(int64); ok {
		if err := x.lines.checkLineTables(off, compDir); err != nil {
			return nil, err
		}
	}
	lr, err := x.d.LineReader(cu)
	if err != nil || lr == nil {
		return nil, err
	}
	uf := unitFiles{x: x, ui: ui, compDir: compDir, idx: map[*dwarf.LineFile]uint32{}}
	// debug/dwarf joins a DWARF 5 file's directory but, unlike for
	// DWARF 4, does not put a relative directory under the compilation
	// directory. DWARF 5 is recognized by its file 0, which earlier
	// versions do not have.
	uf.v5 = len(lr.Files()) > 0 && lr.Files()[0] != nil
	if err := x.decodeLines(lr, uf.of, enc); err != nil {
		return nil, err
	}
	var callFiles []uint32
	for _, lf := range lr.Files() {
		callFiles = append(callFiles, uf.of(lf))
	}
	return callFiles, nil
}

// unitFiles numbers the files of one unit's line program, in the order
// they are met, in ui.files.
type unitFiles struct {
	x       *dwarfIndex
	ui      *unitInfo
	compDir string
	v5      bool
	idx     map[*dwarf.LineFile]uint32
}

func (f *unitFiles) of(lf *dwarf.LineFile) uint32 {
	fi, seen := f.idx[lf]
	if !seen {
		fi = uint32(len(f.ui.files))
		name := ""
		if lf != nil {
			name = lf.Name
			if f.v5 {
				name = underCompDir(f.compDir, name)
			}
		}
		f.ui.files = append(f.ui.files, f.x.fileName(name))
		f.idx[lf] = fi
	}
	return fi
}

// fileName returns the index of name in x.fileTab, adding it: units share
// most file names (a Go unit lists every file it inlined from), so each
// is kept once.
func (x *dwarfIndex) fileName(name string) uint32 {
	if in, ok := x.fileIdx[name]; ok {
		return in
	}
	if x.fileIdx == nil {
		x.fileIdx = map[string]uint32{}
	}
	in := uint32(len(x.fileTab))
	x.fileTab = append(x.fileTab, name)
	x.fileIdx[name] = in
	return in
}

// underCompDir places a DWARF 5 file name that is still relative after
// its directory was joined under the compilation directory. Directory 0 is
// the compilation directory itself (DWARF 5 section 6.2.4.1), so a name
// already under it is left alone rather than prefixed twice.
func underCompDir(compDir, name string) string {
	if compDir == "" || path.IsAbs(name) {
		return name
	}
	cd := path.Clean(compDir)
	if cd != "." && (name == cd || strings.HasPrefix(name, cd+"/")) {
		return name
	}
	return path.Join(compDir, name)
}

// unitWalk is decodeUnit's walk of a unit's DIE tree, which adds a scope
// for each function and inlined call with code.
type unitWalk struct {
	x         *dwarfIndex
	ui        *unitInfo
	bld       *unitBuild
	base      uint64
	rl        rangeLists
	callFiles []uint32
	nameIdx   map[string]uint32  // ui.names by name
	viewIdx   map[viewKey]uint32 // ui.names by the view of a section they were copied from
	// nameRoom is how many bytes of names may yet be copied from the
	// sections (negative: no bound). Twice the sections names come from
	// is more than a real unit's names take, each kept once; a unit whose
	// functions name ever other suffixes of one long string would take
	// their count times its length.
	nameRoom int
	rs       [][2]uint64 // scratch for a DIE's ranges
}

// walk reads the DIEs of unit cu. stack holds, per open DIE with
// children, the scope that encloses its descendants (-1 outside any
// function) and whether they lie inside a function's DIE.
//
// GCC writes the member functions of a class local to a function, a
// lambda's operator() among them, as definitions with code inside that
// class's DIE, itself inside the function's (abstract) DIE; elsewhere a
// class holds only declarations, whose definitions sit at namespace level
// (DW_AT_specification). So a type's children are read inside functions
// only.
func (w *unitWalk) walk(cu *dwarf.Entry) error {
	dw, err := w.x.walker(cu)
	if err != nil {
		return err
	}
	var e die
	if _, err := dw.next(&e); err != nil { // the unit's own entry
		return err
	}
	w.rl = w.x.unitRanges(cu)
	if !cu.Children {
		return nil
	}
	type open struct {
		encl   int32
		inFunc bool
	}
	stack := []open{{-1, false}}
	for len(stack) > 0 {
		ok, err := dw.next(&e)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if e.tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		switch {
		case e.tag == dwarf.TagSubprogram || e.tag == dwarf.TagInlinedSubroutine:
			id, err := w.addScope(&e, top.encl)
			if err != nil {
				return err
			}
			if id < 0 && e.has&hasDecl != 0 {
				// A declaration's children are its parameters.
				if err := dw.skipChildren(&e); err != nil {
					return err
				}
				continue
			}
			if id >= 0 {
				top.encl = id
			}
			top.inFunc = true
		case top.inFunc && holdsLocalFuncs(e.tag):
		case skipsChildren(e.tag):
			if err := dw.skipChildren(&e); err != nil {
				return err
			}
			continue
		}
		if e.children {
			stack = append(stack, top)
		}
	}
	return nil
}

// addScope adds the scope of e, a function or an inlined call inside
// scope cur, and returns its index; -1 when e has no code (no ranges, a
// function the linker discarded, an inlined call outside any function).
func (w *unitWalk) addScope(e *die, cur int32) (int32, error) {
	var err error
	w.rs, err = w.rl.of(e, w.rs[:0])
	if err != nil || len(w.rs) == 0 {
		return -1, nil
	}
	inlined := e.tag == dwarf.TagInlinedSubroutine
	if inlined && cur < 0 || !inlined && !w.x.inExec(w.rs[0][0]) {
		return -1, nil
	}
	bld, base := w.bld, w.base
	if len(bld.scopes) >= 1<<31-1 || len(bld.extra)+len(w.rs) > 1<<31-1 {
		return -1, errors.New("more than 2^31 scopes or ranges in one unit")
	}
	sc := scope{lo: rel(w.rs[0][0], base), hi: rel(w.rs[0][1], base), extra: int32(len(bld.extra)), firstChild: -1, nextSibling: -1}
	for _, rg := range w.rs[1:] {
		bld.extra = append(bld.extra, span32{rel(rg[0], base), rel(rg[1], base)})
	}
	if sc.name, err = w.nameIndex(e); err != nil {
		return -1, err
	}
	id := int32(len(bld.scopes))
	if inlined {
		file, line, col := w.callSite(e)
		sc.setCall(id, file, line, col, &bld.wide)
		sc.nextSibling = bld.scopes[cur].firstChild
		bld.scopes[cur].firstChild = id
	}
	bld.scopes = append(bld.scopes, sc)
	if !inlined {
		for _, rg := range w.rs {
			if lo, hi := rel(rg[0], base), rel(rg[1], base); hi > lo {
				bld.roots = append(bld.roots, rootRange{lo, hi, id})
			}
		}
	}
	return id, nil
}

// nameIndex returns scope.name for e: the index of its name in ui.names
// (added once per unit), with nameLinkage for a linkage name.
func (w *unitWalk) nameIndex(e *die) (uint32, error) {
	name, linkage, view := w.x.nameOf(e, 0)
	var ni uint32
	var err error
	if view {
		// A view is found by where it is, without hashing it: entries
		// that all name one long string would otherwise cost their
		// count times its length.
		k := viewKey{unsafe.StringData(name), len(name)}
		ni, seen := w.viewIdx[k]
		if !seen {
			if ni, err = w.addName(e, name, true); err != nil {
				return 0, err
			}
			w.viewIdx[k] = ni
		}
		if linkage {
			ni |= nameLinkage
		}
		return ni, nil
	}
	if ni, err = w.addName(e, name, false); err != nil {
		return 0, err
	}
	if linkage {
		ni |= nameLinkage
	}
	return ni, nil
}

// viewKey is where a view of a section is, and its length.
type viewKey struct {
	p *byte
	n int
}

// addName returns the index of name in ui.names, adding it (a copy,
// when it is a view of a section) when it is not there.
func (w *unitWalk) addName(e *die, name string, view bool) (uint32, error) {
	if ni, seen := w.nameIdx[name]; seen {
		return ni, nil
	}
	if uint64(len(w.ui.names)) >= nameLinkage {
		return 0, errors.New("more than 2^31 function names in one unit")
	}
	ni := uint32(len(w.ui.names))
	if view && w.x.symName != nil && e.tag == dwarf.TagSubprogram {
		if s, ok := w.x.symName(w.rs[0][0], name); ok {
			name, view = s, false
		}
	}
	if view {
		if w.nameRoom >= 0 {
			if w.nameRoom -= len(name); w.nameRoom < 0 {
				return 0, fmt.Errorf("%w: function names take more than twice the DWARF sections they come from", ErrMalformed)
			}
		}
		name = strings.Clone(name) // not a view of the section, which goes
	}
	w.ui.names = append(w.ui.names, name)
	w.nameIdx[name] = ni
	return ni, nil
}

// callSite returns the call file (in ui.files), line and column of an
// inlined call.
func (w *unitWalk) callSite(e *die) (file, line, col uint32) {
	file = ^uint32(0)
	if v := e.callFile; e.has&hasCallFile != 0 && v >= 0 && v < int64(len(w.callFiles)) {
		file = w.callFiles[v]
	}
	if v := e.callLine; e.has&hasCallLine != 0 && v > 0 {
		line = uint32(v)
	}
	if v := e.callCol; e.has&hasCallCol != 0 && v > 0 {
		col = uint32(v)
	}
	return file, line, col
}

// rangeLists reads the ranges of the DIEs of one unit, as x.d.Ranges
// would for their entries. For an entry with DW_AT_ranges, debug/dwarf
// reads the unit's own entry again to find the base address of the list
// (Data.baseAddressForEntry), allocating it anew for every function and
// inlined call with more than one range. The unit's entry is at hand, so
// the list is read through a copy of it (tmpl) that carries the DIE's
// DW_AT_ranges instead: Ranges then takes the base address and
// DW_AT_addr_base from that copy, as it would from the unit's entry, and
// adds no range of its own (the copy has no DW_AT_high_pc). The DIE's own
// DW_AT_low_pc/DW_AT_high_pc pair comes first, as in Ranges.
type rangeLists struct {
	d    *dwarf.Data
	tmpl *dwarf.Entry
	last *dwarf.Field // tmpl's DW_AT_ranges
}

func (x *dwarfIndex) unitRanges(cu *dwarf.Entry) rangeLists {
	tmpl := &dwarf.Entry{Offset: cu.Offset, Tag: dwarf.TagCompileUnit}
	for _, f := range cu.Field {
		if f.Attr != dwarf.AttrHighpc && f.Attr != dwarf.AttrRanges {
			tmpl.Field = append(tmpl.Field, f)
		}
	}
	tmpl.Field = append(tmpl.Field, dwarf.Field{})
	return rangeLists{d: x.d, tmpl: tmpl, last: &tmpl.Field[len(tmpl.Field)-1]}
}

// of appends the ranges of e (not a unit entry) to buf.
func (rl rangeLists) of(e *die, buf [][2]uint64) ([][2]uint64, error) {
	if e.has&hasLow != 0 && e.has&hasHigh != 0 {
		hi := e.high
		if e.highConst {
			hi = e.low + uint64(e.highOff)
		}
		buf = append(buf, [2]uint64{e.low, hi})
	}
	if e.seen&hasRanges == 0 {
		return buf, nil
	}
	*rl.last = e.rangesField()
	rs, err := rl.d.Ranges(rl.tmpl)
	if err != nil {
		return nil, err
	}
	return append(buf, rs...), nil
}
