package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(redlock(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// redlock runs the command line args, with the environment read through
// getenv, and returns the exit code. Help and reports go to stdout; logs and
// errors go to stderr.
func redlock(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		io.WriteString(stderr, mainHelp)
		return exitUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "run":
		return runMain(args, getenv, stdout, stderr)
	case "status":
		return statusMain(args, getenv, stdout, stderr)
	case "ls":
		return lsMain(args, getenv, stdout, stderr)
	case "unlock":
		return unlockMain(args, getenv, os.Stdin, stdout, stderr)
	case "elect":
		return electMain(args, getenv, stdout, stderr)
	case superviseCommand:
		return superviseMain(args, stderr)
	case "version", "--version", "-version":
		if len(args) > 0 {
			return usageError(stderr, "version", fmt.Errorf("unexpected argument %q", args[0]))
		}
		writeVersion(stdout)
		return exitOK
	case "help", "-h", "--help", "-help":
		topic := ""
		if len(args) > 0 {
			topic = args[0]
		}
		if len(args) > 1 {
			return usageError(stderr, "", fmt.Errorf("help takes one command, not %d words", len(args)))
		}
		if !writeHelp(stdout, topic) {
			return usageError(stderr, "", fmt.Errorf("no help for %q: the commands are run, status, ls, unlock, elect, version and help", topic))
		}
		return exitOK
	}
	if strings.HasPrefix(cmd, "-") {
		return usageError(stderr, "", fmt.Errorf("%s before a command: options follow the command, as in \"redlock run [OPTIONS] KEY -- COMMAND\"", cmd))
	}
	return usageError(stderr, "", fmt.Errorf("unknown command %q: the commands are run, status, ls, unlock, elect, version and help", cmd))
}
