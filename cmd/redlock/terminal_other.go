//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "os"

// inForeground reports false where redlock cannot ask the terminal: the
// command then always runs in a process group of its own.
func inForeground() bool { return false }

// terminalWidth returns 0: the width is unknown.
func terminalWidth(*os.File) int { return 0 }
