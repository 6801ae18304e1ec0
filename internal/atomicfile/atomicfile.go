// Package atomicfile writes a named output file so that it holds either
// its old contents or the complete new ones, never a part: [Create] opens
// a temporary file in the same directory, [File.Commit] syncs it and
// renames it over the name, [File.Abort] removes it.
//
// # Security
//
// The temporary file is created exclusively, with a random name that
// begins with a dot and holds ".tmp-", mode 0666 less the umask, or the
// permission bits of the file it replaces. While any File is open,
// SIGINT and SIGTERM remove every temporary file and then end the process
// as the signal would have, so an interrupted command leaves the old
// output (or none) and no temporary file. An existing name that is a
// symbolic link is written through: the link's target is replaced, the
// link kept, as os.Create would write the target. An existing name that
// is not a regular file (a device, a FIFO, /dev/stdout) is written
// directly, as os.Create would: renaming over it could replace
// /dev/null itself.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// File is an output being written. Its methods are not safe for
// concurrent use.
type File struct {
	f      *os.File
	name   string // what Commit renames to
	tmp    string // "" when writing directly
	closed bool
}

// Create opens a temporary file that Commit will rename to name.
func Create(name string) (*File, error) {
	target, st := name, (fs.FileInfo)(nil)
	if fi, err := os.Lstat(name); err == nil {
		st = fi
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := filepath.EvalSymlinks(name)
			if err == nil {
				fi, err = os.Stat(t)
			}
			if err != nil {
				st = fi // a dangling or looping link: written directly
			} else {
				target, st = t, fi
			}
		}
	}
	if st != nil && !st.Mode().IsRegular() {
		f, err := os.Create(name)
		if err != nil {
			return nil, err
		}
		return &File{f: f, name: name}, nil
	}
	dir, base := filepath.Split(target)
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
	reg.Lock()
	defer reg.Unlock()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if st != nil {
		if err := f.Chmod(st.Mode().Perm()); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	track(tmp)
	return &File{f: f, name: target, tmp: tmp}, nil
}

// Name returns the name the file is written to.
func (f *File) Name() string { return f.name }

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Commit syncs the temporary file, closes it and renames it to the name.
// On failure the temporary file is removed and the old file kept.
func (f *File) Commit() error {
	if f.closed {
		return errors.New("atomicfile: " + f.name + " already committed or aborted")
	}
	f.closed = true
	if f.tmp == "" {
		return f.f.Close()
	}
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	reg.Lock()
	defer reg.Unlock()
	if err == nil {
		err = os.Rename(f.tmp, f.name)
	}
	untrack(f.tmp)
	if err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}

// Abort closes and removes the temporary file, keeping the old one. It
// does nothing after Commit, so that it can be deferred.
func (f *File) Abort() {
	if f.closed {
		return
	}
	f.closed = true
	f.f.Close()
	if f.tmp == "" {
		return
	}
	reg.Lock()
	defer reg.Unlock()
	os.Remove(f.tmp)
	untrack(f.tmp)
}

// reg holds the temporary files of the open Files, for the signal
// handler; its lock also orders a Commit's rename with the handler.
var reg struct {
	sync.Mutex
	temps map[string]bool
	ch    chan os.Signal
}

// track adds tmp, starting to catch signals with the first. reg is
// locked.
func track(tmp string) {
	if len(reg.temps) == 0 {
		reg.temps = map[string]bool{}
		reg.ch = make(chan os.Signal, 1)
		signal.Notify(reg.ch, os.Interrupt, syscall.SIGTERM)
		go onSignal(reg.ch)
	}
	reg.temps[tmp] = true
}

// untrack removes tmp, and stops catching signals with the last. reg is
// locked.
func untrack(tmp string) {
	if !reg.temps[tmp] {
		return
	}
	delete(reg.temps, tmp)
	if len(reg.temps) == 0 {
		signal.Stop(reg.ch)
		close(reg.ch) // no delivery after Stop: onSignal returns
	}
}

// onSignal removes the temporary files and ends the process with the
// signal it caught, its default action restored.
func onSignal(ch chan os.Signal) {
	sig, ok := <-ch
	if !ok {
		return
	}
	reg.Lock() // held to the end: no Commit renames a removed file
	for tmp := range reg.temps {
		os.Remove(tmp)
	}
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Signal(sig)
	}
	time.Sleep(time.Second) // the signal ends the process meanwhile
	os.Exit(2)
}
