package main

import (
	"bytes"
	"os"
	"strconv"
)

// procStat is what the supervisor reads of a process in /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	state           byte   // R, S, D, Z, ...
	start           uint64 // start time after boot, in clock ticks: tells a pid reused apart
}

// zombie reports whether the process has exited and waits to be reaped.
func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// parseStat parses one /proc/PID/stat line. The command name, in
// parentheses, may hold any byte but a NUL, spaces and parentheses
// included: the fields are counted from the last ')'. It reports false for a
// malformed line.
func parseStat(line []byte) (procStat, bool) {
	var s procStat
	open, end := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return s, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil || pid <= 0 {
		return s, false
	}
	// After the name: state ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime ...
	f := bytes.Fields(line[end+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return s, false
	}
	s.pid, s.state = pid, f[0][0]
	if s.ppid, err = strconv.Atoi(string(f[1])); err != nil || s.ppid < 0 {
		return s, false
	}
	if s.pgrp, err = strconv.Atoi(string(f[2])); err != nil || s.pgrp < 0 {
		return s, false
	}
	if s.start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return s, false
	}
	return s, true
}

// readStat reads /proc/PID/stat; it reports false if the process is gone
// or its line cannot be read.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// processes returns every process in /proc that could be read. Processes
// that exit while it reads are left out.
func processes() []procStat {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	var ps []procStat
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		if s, ok := readStat(pid); ok {
			ps = append(ps, s)
		}
	}
	return ps
}

// descendants returns the processes below root in the process tree,
// zombies included, found in ps.
func descendants(ps []procStat, root int) []procStat {
	children := make(map[int][]procStat)
	for _, s := range ps {
		if s.pid != root {
			children[s.ppid] = append(children[s.ppid], s)
		}
	}
	var out []procStat
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c.pid] { // a pid read twice as it was reused
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}
