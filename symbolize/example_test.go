package symbolize_test

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/perfcheck/perfcheck/addrspace"
	"github.com/perfcheck/perfcheck/symbolize"
)

// Open reads an ELF file lazily. A runtime address becomes a file address
// through the load bias of its mapping (here the executable mapping of a
// PIE binary as /proc/PID/maps would show it), and Frames gives its
// frames leaf first: the inlined call, then the function it was inlined
// into.
func ExampleOpen() {
	b, err := symbolize.Open("../testdata/perf/bin/cshared", symbolize.Options{NoDebugFile: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	bias, err := b.Bias(addrspace.Mapping{Start: 0x555555555000, Limit: 0x555555556000, Pgoff: 0x1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	frames, err := b.Frames(0x555555555412-bias, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range frames {
		fmt.Printf("%s %s:%d inlined=%v\n", f.Function, filepath.Base(f.File), f.Line, f.Inlined)
	}
	// Output:
	// atol stdlib.h:369 inlined=true
	// main main.c:84 inlined=false
}

// A kallsyms listing answers kernel addresses; the same Frames call serves
// ELF files, DWARF and perf maps.
func ExampleOpenKallsyms() {
	const listing = "ffffffff81000000 T _text\n" +
		"ffffffff81000000 T startup_64\n" +
		"ffffffff81001000 T do_syscall_64\n" +
		"ffffffffc0a00000 t ext4_readdir\t[ext4]\n"
	b, err := symbolize.OpenKallsyms(strings.NewReader(listing), "kallsyms", symbolize.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var frames []symbolize.Frame
	for _, addr := range []uint64{0xffffffff81000010, 0xffffffff81001234, 0xffffffffc0a00042} {
		frames, err = b.Frames(addr, frames)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%#x %s\n", addr, frames[0].Function)
	}
	// Output:
	// 0xffffffff81000010 startup_64
	// 0xffffffff81001234 do_syscall_64
	// 0xffffffffc0a00042 ext4_readdir
}

// Demangle turns C++ and Rust linkage names into source names and leaves
// C and Go names alone.
func ExampleDemangle() {
	fmt.Println(symbolize.Demangle("_ZN6shapes4Rect4areaEv"))
	fmt.Println(symbolize.Demangle("_ZN4core3fmt5write17h0123456789abcdefE"))
	fmt.Println(symbolize.Demangle("main.(*T).Method"))
	fmt.Println(symbolize.Demangle("memcpy@GLIBC_2.14"))
	// Output:
	// shapes::Rect::area()
	// core::fmt::write
	// main.(*T).Method
	// memcpy@GLIBC_2.14
}
