package check

import "testing"

// DevIno.now is the one device/inode test judge, replacedDuringRecording,
// cfiFiles and replacedSoFar share; each site keys on a different answer,
// so each answer is pinned here.
func TestDevInoNow(t *testing.T) {
	t.Parallel()
	rec := &DevIno{Maj: 8, Min: 1, Ino: 42, Generation: 7}
	for _, c := range []struct {
		name string
		di   *DevIno
		st   fileState
		want inodeMatch
	}{
		{"no device and inode recorded", nil, fileState{Exists: true, Maj: 8, Min: 1, Ino: 42}, inodeUnknown},
		{"no file at the path", rec, fileState{Maj: 8, Min: 1, Ino: 42}, inodeUnknown},
		{"same device and inode", rec, fileState{Exists: true, Maj: 8, Min: 1, Ino: 42}, inodeSame},
		{"same device, other inode", rec, fileState{Exists: true, Maj: 8, Min: 1, Ino: 43}, inodeOther},
		{"other major", rec, fileState{Exists: true, Maj: 9, Min: 1, Ino: 42}, inodeOtherDevice},
		{"other minor, other inode", rec, fileState{Exists: true, Maj: 8, Min: 2, Ino: 43}, inodeOtherDevice},
	} {
		if got := c.di.now(&c.st); got != c.want {
			t.Errorf("%s: now = %d, want %d", c.name, got, c.want)
		}
	}
	// Two mappings: the generation (which stat cannot give) is not compared.
	if got := rec.compare(DevIno{Maj: 8, Min: 1, Ino: 42, Generation: 8}); got != inodeSame {
		t.Errorf("other generation: compare = %d, want inodeSame", got)
	}
	if got := rec.compare(DevIno{Maj: 8, Min: 1, Ino: 41}); got != inodeOther {
		t.Errorf("other inode: compare = %d, want inodeOther", got)
	}
}
