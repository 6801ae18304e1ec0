package symbolize

import (
	"testing"
)

// TestCallSite checks that a scope's call site comes back as set, for
// files and columns that fit scope.callFC and for those that do not (at
// and past 0xffff, and the no-file marker), among scopes with none.
func TestCallSite(t *testing.T) {
	t.Parallel()
	type call struct{ file, line, col uint32 }
	calls := []call{
		{0, 0, 0}, {1, 2, 3}, {0xfffe, 7, 0xfffe}, {0xffff, 8, 1}, {2, 9, 0xffff},
		{^uint32(0), 10, 0}, {70000, 11, 70000}, {5, 1<<32 - 1, 12},
	}
	var scopes []scope
	var wide []wideCall
	for i, c := range calls {
		scopes = append(scopes, scope{}) // a subprogram, with no call site
		var s scope
		s.setCall(int32(2*i+1), c.file, c.line, c.col, &wide)
		scopes = append(scopes, s)
	}
	ui := &unitInfo{scopes: scopes, wide: wide}
	if len(ui.wide) != 4 {
		t.Errorf("%d wide call sites, want 4", len(ui.wide))
	}
	for i, c := range calls {
		f, l, col := ui.callSite(int32(2*i + 1))
		if (call{f, l, col}) != c {
			t.Errorf("call site %d: got %v, want %v", i, call{f, l, col}, c)
		}
	}
}
