package symbolize_test

import (
	"fmt"
	"strings"

	"github.com/perfcheck/perfcheck/symbolize"
)

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
