package check

import (
	"os"
	"strings"
	"sync"

	"github.com/perfcheck/perfcheck/dso"
)

// systemSymbols is the symbol opener of the tests that analyze real
// recordings. Every such recording runs through the C library and the
// kernel, and reading their symbols (the C library's detached DWARF in
// /usr/lib/debug above all) was most of each analysis' work, done again
// by every test; what the tests prove is about their own programs. So the
// files no test changes — under /usr and /lib, and this boot's
// /proc/kallsyms — are opened once for the test binary, by the default
// opener, and shared (a lookup is safe for concurrent use); every other
// file is opened afresh by the default opener, as Analyze does. The check
// still proves each shared lookup against each DSO's verdict
// (proveLookup), and a shared file is reused only while it has the
// identity (device, inode, size, modification time) it was opened with.
// A separate debug file is not shared: openDSO completes its lookup with
// the program headers of the DSO's code file.
var systemSymbols = &sharedOpener{files: map[string]*sharedFile{}}

type sharedOpener struct {
	mu    sync.Mutex
	files map[string]*sharedFile // by path and kind
}

// sharedFile is one file's lookup, opened once.
type sharedFile struct {
	once sync.Once
	st   os.FileInfo // the identity it was opened with
	lk   symbolLookup
	err  error
}

// sameFile reports whether a and b are the same file, unchanged: the
// same device and inode (os.SameFile), size and modification time.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// unchanging reports whether no test changes the file at path.
func unchanging(path string, kind dso.Kind) bool {
	switch kind {
	case dso.Kernel:
		return path == "/proc/kallsyms"
	case dso.File:
		return strings.HasPrefix(path, "/usr/") || strings.HasPrefix(path, "/lib/") || strings.HasPrefix(path, "/lib64/")
	}
	return false
}

func (o *sharedOpener) Open(path string, kind dso.Kind) (symbolLookup, error) {
	if !unchanging(path, kind) {
		return defaultOpener{}.Open(path, kind)
	}
	st, err := os.Stat(path)
	if err != nil {
		return defaultOpener{}.Open(path, kind)
	}
	key := path + "\x00" + kind.String()
	o.mu.Lock()
	f := o.files[key]
	if f == nil || !sameFile(f.st, st) {
		f = &sharedFile{st: st}
		o.files[key] = f // a replaced file's lookup stays open: tests end soon
	}
	o.mu.Unlock()
	f.once.Do(func() { f.lk, f.err = defaultOpener{}.Open(path, kind) })
	if f.err != nil {
		return nil, f.err
	}
	if sl, ok := f.lk.(*symLookup); ok && sl.fileOffsets && !loadsHoldCode(sl.loads) {
		// A separate debug file: openDSO gives each of its lookups the
		// program headers of its DSO's code file.
		return defaultOpener{}.Open(path, kind)
	}
	return sharedLookup{f.lk}, nil
}

// sharedLookup is a shared file's lookup, which its users do not close.
type sharedLookup struct{ symbolLookup }

func (sharedLookup) Close() error { return nil }

// Warnings implements symbolWarner: a Binary's warnings do not depend on
// which lookups ran, so sharing it does not change them.
func (l sharedLookup) Warnings() []string {
	if w, ok := l.symbolLookup.(symbolWarner); ok {
		return w.Warnings()
	}
	return nil
}

// withSystemSymbols is opts with systemSymbols as its opener, unless the
// test set its own.
func withSystemSymbols(opts Options) Options {
	if opts.symbolizer == nil {
		opts.symbolizer = systemSymbols
	}
	return opts
}
