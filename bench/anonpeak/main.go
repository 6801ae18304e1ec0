//go:build linux

// Command anonpeak runs a command and reports its peak anonymous memory,
// which the kernel does not keep (VmHWM is the peak of all resident
// memory, file pages included): it reads RssAnon from /proc/PID/status
// every millisecond while the command runs. A shell loop sleeping 5 ms
// misses short peaks, such as a symbolizer's load.
//
//	anonpeak [-o FILE] CMD [ARG...]
//
// The command's stdin and stderr are anonpeak's; its stdout goes to FILE
// (-o) or to anonpeak's stdout. The report, on stderr as the last line:
//
//	anonpeak: wall 1.03 s, cpu 0.98 s, maxrss 33792 kB, peak anon 25600 kB, last anon 19456 kB
//
// "last anon" is the last sample before the command exited. Linux only.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

func main() {
	out := flag.String("o", "", "write the command's stdout to `file`")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: anonpeak [-o FILE] CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "anonpeak:", err)
			os.Exit(2)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "anonpeak:", err)
		os.Exit(2)
	}
	done := make(chan struct{})
	sampled := make(chan [2]int)
	go func() {
		var peak, last int
		path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			select {
			case <-done:
				sampled <- [2]int{peak, last}
				return
			default:
			}
			if v, ok := rssAnon(path); ok {
				last, peak = v, max(peak, v)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	err := cmd.Wait()
	wall := time.Since(t0)
	close(done)
	s := <-sampled
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "anonpeak:", err)
		os.Exit(2)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = int64(ru.Maxrss)
	}
	fmt.Fprintf(os.Stderr, "anonpeak: wall %.2f s, cpu %.2f s, maxrss %d kB, peak anon %d kB, last anon %d kB\n",
		wall.Seconds(), cpu.Seconds(), maxrss, s[0], s[1])
	if err != nil {
		os.Exit(cmd.ProcessState.ExitCode())
	}
}

// rssAnon reads the RssAnon line of a /proc/PID/status file, in kB. A
// zombie's status has none; ok is false then.
func rssAnon(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, []byte("RssAnon:"))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+len("RssAnon:"):])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.Atoi(string(f[0]))
	return v, err == nil && v > 0
}
