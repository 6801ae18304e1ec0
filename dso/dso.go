// Package dso names the kinds of mapped objects (DSOs) that perf records:
// files, the kernel and its modules, the vDSO, and the mappings that have
// no file. It is shared by the packages that classify mappings and the
// ones that look their binaries up, so that a kind has one name and one
// printed form everywhere.
package dso

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
