// Package dso names the kinds of mapped objects (DSOs) that perf records:
// files, the kernel and its modules, the vDSO, and the mappings that have
// no file. It is shared by the packages that classify mappings and the
// ones that look their binaries up, so that a kind has one name and one
// printed form everywhere.
package dso

import (
	"path"
	"strings"
)

// Kind says what a mapping is. The kernel, its modules and the vDSO are
// cached, found and read differently from files; the other kinds have no
// binary to find.
type Kind uint8

// Kinds of mappings.
const (
	File     Kind = iota // a regular file (executable or shared library)
	Kernel               // the kernel image, [kernel.kallsyms] or a vmlinux
	Module               // a kernel module (.ko)
	VDSO                 // [vdso] (or [vdso32], [vdsox32])
	Vsyscall             // [vsyscall]: a fixed kernel page, no file, no build-id
	Anon                 // anonymous memory: //anon, [anon:...], [heap], [stack], no name
	JIT                  // anonymous executable memory of a process with a /tmp/perf-PID.map
	Unknown              // an address no mapping covers
	Guest                // guest or hypervisor code: not this machine's to resolve
)

var kindNames = [...]string{"file", "kernel", "module", "vdso", "vsyscall", "anon", "jit", "unknown", "guest"}

// String returns the kind's name as reports print it ("file", "kernel",
// "module", "vdso", "vsyscall", "anon", "jit", "unknown", "guest").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// MarshalText makes a Kind a JSON string: its name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// BaseName is the short name reports give the DSO at path p: the file
// name without its directory, and perf's bracketed names
// ("[kernel.kallsyms]", "[anon:x/y]") as they are. A path that ends in
// "/" is kept whole rather than shown as "".
func BaseName(p string) string {
	if strings.HasPrefix(p, "[") {
		return p
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i+1 < len(p) {
		return p[i+1:]
	}
	return p
}

// ModuleName returns the short name perf gives a kernel module, as
// kmod_path__parse_name (tools/perf/util/dso.c) does: "[name]" from
// "/path/name.ko", compressed or not (.gz, .xz, .zst: the kernel's
// CONFIG_MODULE_COMPRESS_* formats), with dashes turned into
// underscores; a "[name]" as it is. The build-id table names a module by
// its path or by that short name. isModule is perf's verdict on whether
// p names a module at all: a .ko file, or a "[name]" other than the
// kernel's, the vDSO's and [vsyscall].
func ModuleName(p string) (name string, isModule bool) {
	if strings.HasPrefix(p, "[") {
		for _, k := range []string{"[kernel.kallsyms", "[guest.kernel.kallsyms", "[vdso", "[vsyscall"} {
			if strings.HasPrefix(p, k) {
				return p, false
			}
		}
		return p, true
	}
	b := path.Base(p)
	for _, ext := range []string{".gz", ".xz", ".zst"} {
		b = strings.TrimSuffix(b, ext)
	}
	isModule = strings.HasSuffix(b, ".ko")
	b = strings.TrimSuffix(b, ".ko")
	return "[" + strings.ReplaceAll(b, "-", "_") + "]", isModule
}
