//go:build linux

package symbolize

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestCloseDropsPointersIntoMappings opens a Go binary whose .gopclntab is
// a mapping of the file and whose compressed DWARF is decompressed into
// anonymous memory, loads every index and symbolizes some addresses (so
// that units are decoded and sections still mapped), then closes it:
// nothing reachable from the Binary may still point into the released
// mappings, since the runtime may map its heap there later and a stale
// pointer into a span it thinks free makes the garbage collector throw.
func TestCloseDropsPointersIntoMappings(t *testing.T) {
	gobin := needTool(t, "go")
	dir := goProgDir(t)
	// DWARF compressed (decompressed into anonymous memory) and not
	// (mapped from the file).
	for _, ld := range []string{"", "-compressdwarf=false"} {
		name := "compressed-dwarf"
		if ld != "" {
			name = "plain-dwarf"
		}
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			if o, err := goBuild(gobin, dir, p, "-ldflags="+ld); err != nil {
				t.Fatalf("go build: %v\n%s", err, o)
			}
			checkClosePointers(t, p)
		})
	}
}

func checkClosePointers(t *testing.T, p string) {
	addrs := textAddrs(t, p, 50)
	b, err := Open(p, Options{NoDebugFile: true})
	if err != nil {
		t.Fatal(err)
	}
	b.Warnings()
	for _, a := range addrs {
		b.Frames(a, nil)
	}
	if g := b.loadGo(); g == nil || g.inline == nil || !g.inline.mapped {
		t.Fatal(".gopclntab is not mapped: the test would check nothing there")
	}
	x := b.loadDWARF()
	if x == nil || x.d == nil {
		t.Fatal("no DWARF loaded, or already released: the test would check nothing there")
	}
	var ranges [][2]uintptr
	for _, rs := range []*regionSet{&b.regions, &x.secs} {
		rs.mu.Lock()
		for _, r := range rs.list {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
			ranges = append(ranges, [2]uintptr{base, base + uintptr(len(r.mem))})
		}
		rs.mu.Unlock()
	}
	if len(ranges) < 2 {
		t.Fatalf("%d regions mapped: want .gopclntab's and DWARF sections'", len(ranges))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	w := &pointerWalk{ranges: ranges, seen: map[walkKey]bool{}}
	w.walk(reflect.ValueOf(b), "b")
	for _, f := range w.found {
		t.Errorf("after Close, %s points into a released mapping", f)
	}
}

type walkKey struct {
	p uintptr
	t reflect.Type
}

// pointerWalk follows every pointer, slice, string, map and interface
// reachable from a value (unexported fields included) and records the
// paths of those whose target lies in one of ranges.
type pointerWalk struct {
	ranges [][2]uintptr
	seen   map[walkKey]bool
	found  []string
}

func (w *pointerWalk) check(p uintptr, path string) {
	for _, r := range w.ranges {
		if r[0] <= p && p < r[1] {
			if len(w.found) < 20 {
				w.found = append(w.found, path)
			}
			return
		}
	}
}

func (w *pointerWalk) walk(v reflect.Value, path string) {
	if !v.IsValid() {
		return
	}
	t := v.Type()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		p := v.Pointer()
		w.check(p, path)
		k := walkKey{p, t}
		if w.seen[k] {
			return
		}
		w.seen[k] = true
		w.walk(v.Elem(), path)
	case reflect.UnsafePointer:
		w.check(v.Pointer(), path)
	case reflect.Interface:
		w.walk(v.Elem(), path)
	case reflect.String:
		if v.Len() > 0 {
			w.check(uintptr(unsafe.Pointer(unsafe.StringData(v.String()))), path)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		w.check(v.Pointer(), path)
		k := walkKey{v.Pointer(), t}
		if w.seen[k] || !hasPointers(t.Elem()) {
			return
		}
		w.seen[k] = true
		for i := 0; i < v.Len(); i++ {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Array:
		if hasPointers(t.Elem()) {
			for i := 0; i < v.Len(); i++ {
				w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		it := v.MapRange()
		for it.Next() {
			w.walk(it.Key(), path+"{key}")
			w.walk(it.Value(), path+"{value}")
		}
	case reflect.Struct:
		if t.PkgPath() == "sync/atomic" && strings.HasPrefix(t.Name(), "Pointer[") {
			// atomic.Pointer[T]{_ [0]*T; _ noCopy; v unsafe.Pointer}:
			// follow v as a *T.
			if ptr := v.FieldByName("v").UnsafePointer(); ptr != nil {
				w.walk(reflect.NewAt(t.Field(0).Type.Elem().Elem(), ptr), path)
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			w.walk(v.Field(i), path+"."+t.Field(i).Name)
		}
	}
}

// hasPointers reports whether values of t hold pointers.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Interface, reflect.String,
		reflect.Slice, reflect.Map, reflect.Chan, reflect.Func:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
