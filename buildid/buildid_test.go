package buildid

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	id, err := Parse("0102ABcd")
	require.NoError(t, err)
	assert.Equal(t, ID{1, 2, 0xab, 0xcd}, id)
	assert.Equal(t, "0102abcd", id.String())
	for _, bad := range []string{"", "1", "zz", "0g", " 0102"} {
		_, err := Parse(bad)
		assert.Error(t, err, "Parse(%q)", bad)
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	id16 := ID(bytes.Repeat([]byte{0xab}, 16))
	padded := append(bytes.Clone(id16), 0, 0, 0, 0)
	other := append(bytes.Clone(id16), 0, 0, 0, 1)
	for _, c := range []struct {
		a, b ID
		want bool
	}{
		{id16, id16, true},
		{id16, padded, true},
		{padded, id16, true},
		{id16, other, false},
		{ID{0, 0}, ID{0, 0}, false},
		{nil, nil, false},
		{ID{1, 2}, ID{1, 3}, false},
	} {
		assert.Equal(t, c.want, c.a.Matches(c.b), "%v.Matches(%v)", c.a, c.b)
	}
}

func TestIsZero(t *testing.T) {
	t.Parallel()
	assert.True(t, ID(nil).IsZero())
	assert.True(t, ID{0, 0, 0}.IsZero())
	assert.False(t, ID{0, 1}.IsZero())
}

func TestJSON(t *testing.T) {
	t.Parallel()
	type row struct {
		ID ID `json:"build_id"`
	}
	b, err := json.Marshal(row{ID{0xde, 0xad}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"build_id":"dead"}`, string(b))

	var r row
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, ID{0xde, 0xad}, r.ID)

	require.NoError(t, json.Unmarshal([]byte(`{"build_id":""}`), &r))
	assert.Nil(t, r.ID)
	assert.Error(t, json.Unmarshal([]byte(`{"build_id":"xyz"}`), &r))
}
