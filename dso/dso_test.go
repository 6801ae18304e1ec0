package dso

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]string{
		File: "file", Kernel: "kernel", Module: "module", VDSO: "vdso", Vsyscall: "vsyscall",
		Anon: "anon", JIT: "jit", Unknown: "unknown", Guest: "guest", Guest + 1: "kind?",
	} {
		assert.Equal(t, want, k.String())
	}
}

func TestKindJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(struct {
		Kind Kind `json:"kind"`
	}{Module})
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"module"}`, string(b))
}

func TestBaseName(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"/usr/lib/libc.so.6": "libc.so.6",
		"libc.so.6":          "libc.so.6",
		"[kernel.kallsyms]":  "[kernel.kallsyms]",
		"[anon:dalvik/heap]": "[anon:dalvik/heap]",
		"/tmp/dir/":          "/tmp/dir/",
		"//anon":             "anon",
		"/memfd:x (deleted)": "memfd:x (deleted)",
	} {
		assert.Equal(t, want, BaseName(p), p)
	}
}

func TestModuleName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, name string
		module     bool
	}{
		{"/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko", "[ext4]", true},
		{"/lib/modules/6.1.0/kernel/drivers/kvm-intel.ko.xz", "[kvm_intel]", true},
		{"/m/snd-hda.ko.zst", "[snd_hda]", true},
		{"/m/nf-nat.ko.gz", "[nf_nat]", true},
		{"/m/old.ko.bz2", "[old.ko.bz2]", false}, // not a compression modules come in
		{"[kvm-intel]", "[kvm-intel]", true},     // a short name is kept as it is
		{"[kernel.kallsyms]", "[kernel.kallsyms]", false},
		{"[vdso]", "[vdso]", false},
		{"/usr/lib/libc.so.6", "[libc.so.6]", false},
	} {
		name, module := ModuleName(c.path)
		assert.Equal(t, c.name, name, c.path)
		assert.Equal(t, c.module, module, c.path)
	}
}
