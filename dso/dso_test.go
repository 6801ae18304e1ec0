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
