package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serverSample is what the servers had done when sampled: the CPU time
// they had used (INFO cpu) and the commands they had processed, by name
// (INFO commandstats), summed over the servers.
type serverSample struct {
	cpu      time.Duration
	commands map[string]int64
	ok       bool  // every server told both
	err      error // why not
}

// Sampling the servers right after hundreds of contenders have hammered
// them, on a busy machine: a patient timeout, and a few tries.
const (
	sampleTimeout = 5 * time.Second
	sampleTries   = 3
)

// sampleServers samples the servers at addrs; the sample is not ok when a
// server does not answer or tell.
func sampleServers(ctx context.Context, addrs []string) serverSample {
	s := serverSample{commands: map[string]int64{}}
	for _, a := range addrs {
		var cpu time.Duration
		var commands map[string]int64
		var err error
		for range sampleTries {
			if cpu, commands, err = sampleServer(ctx, a); err == nil || ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			s.err = fmt.Errorf("sampling %s: %w", a, err)
			return s
		}
		s.cpu += cpu
		for name, n := range commands {
			s.commands[name] += n
		}
	}
	s.ok = true
	return s
}

// sampleServer reads one server's CPU time and commands.
func sampleServer(ctx context.Context, addr string) (time.Duration, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	c, err := dialRESP(ctx, addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	var cpu time.Duration
	v, err := c.do("INFO", "cpu")
	info, _ := v.(string)
	if err != nil {
		return 0, nil, err
	}
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		secs, err := strconv.ParseFloat(infoField(info, f), 64)
		if err != nil {
			return 0, nil, fmt.Errorf("INFO cpu %s: %w", f, err)
		}
		cpu += time.Duration(secs * float64(time.Second))
	}
	v, err = c.do("INFO", "commandstats")
	info, _ = v.(string)
	if err != nil {
		return 0, nil, err
	}
	return cpu, parseCommandStats(info), nil
}

// harnessCommands are the commands the harness itself sends the servers
// while it samples them, left out of the counts.
var harnessCommands = []string{"info"}

// since returns what the servers did between the sample before and s: the
// CPU time and the commands by name, the harness's own left out; ok only
// when both samples are.
func (s serverSample) since(before serverSample) (cpu time.Duration, commands map[string]int64, ok bool) {
	if !s.ok || !before.ok || s.cpu < before.cpu {
		return 0, nil, false
	}
	commands = map[string]int64{}
	for name, n := range s.commands {
		if d := n - before.commands[name]; d > 0 {
			commands[name] = d
		}
	}
	for _, name := range harnessCommands {
		delete(commands, name)
	}
	return s.cpu - before.cpu, commands, true
}

// parseCommandStats returns the calls of each command in an INFO
// commandstats reply ("cmdstat_NAME:calls=N,usec=..."), by NAME; lines it
// cannot read are left out.
func parseCommandStats(info string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok || name == "" {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					out[name] += n
				}
				break
			}
		}
	}
	return out
}

// sumCommands is the total of commands by name.
func sumCommands(commands map[string]int64) int64 {
	var n int64
	for _, c := range commands {
		n += c
	}
	return n
}

// commandsPer lists commands by name, each count over n, the most first:
// "evalsha 2.1, get 2.0, …".
func commandsPer(commands map[string]int64, n int) string {
	names := slices.Collect(maps.Keys(commands))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(commands[b], commands[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.2f", name, float64(commands[name])/float64(n))
	}
	return strings.Join(parts, ", ")
}
