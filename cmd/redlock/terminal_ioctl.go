//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// inForeground reports whether redlock belongs to the foreground process
// group of its controlling terminal: the group to which the terminal sends
// Ctrl-C. Then the command shares redlock's group, so that it can read the
// terminal and gets those signals from the terminal itself.
func inForeground() bool {
	for _, f := range []*os.File{os.Stdin, os.Stderr, os.Stdout} {
		var pgrp int32
		if ioctl(f, syscall.TIOCGPGRP, unsafe.Pointer(&pgrp)) == nil {
			return int(pgrp) == syscall.Getpgrp()
		}
	}
	return false
}

// terminalWidth returns the width of the terminal f, in columns, or 0 when
// f is not a terminal.
func terminalWidth(f *os.File) int {
	var ws struct{ row, col, xpixel, ypixel uint16 }
	if ioctl(f, syscall.TIOCGWINSZ, unsafe.Pointer(&ws)) != nil {
		return 0
	}
	return int(ws.col)
}

// ioctl is ioctl(2) on f with a pointer argument.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}
