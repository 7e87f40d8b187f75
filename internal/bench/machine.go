package bench

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run took place.
type Machine struct {
	CPU        string // model name from /proc/cpuinfo
	Cores      int    // logical CPUs
	GOMAXPROCS int
	MemoryGiB  float64
	Kernel     string
	OS, Arch   string
	Go         string
	Redis      string // redis-server version
	Date       time.Time
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// started and ended: other work on the machine skews the numbers.
	LoadStart, LoadEnd string
	// Modules are the versions of the client and comparison modules the
	// harness was built with, by module path.
	Modules map[string]string
}

// reportedModules are the modules whose versions the report shows.
var reportedModules = []string{
	"github.com/go-redsync/redsync/v4",
	"github.com/redis/go-redis/v9",
	"github.com/gomodule/redigo",
	"github.com/redis/rueidis",
	"github.com/valkey-io/valkey-go",
}

// DescribeMachine returns this machine's description; redis is the
// version the servers reported.
func DescribeMachine(redis string) Machine {
	m := Machine{
		CPU:        cpuModel(readFile("/proc/cpuinfo")),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		MemoryGiB:  memTotalGiB(readFile("/proc/meminfo")),
		Kernel:     strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Go:         runtime.Version(),
		Redis:      redis,
		Date:       time.Now().UTC(),
		LoadStart:  LoadAverage(),
		Modules:    map[string]string{},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			m.Modules[d.Path] = d.Version
		}
	}
	return m
}

// LoadAverage returns the 1-minute load average from /proc/loadavg, or "".
func LoadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// cpuModel returns the first "model name" of a /proc/cpuinfo, or "unknown".
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memTotalGiB returns MemTotal of a /proc/meminfo in GiB, or 0.
func memTotalGiB(meminfo string) float64 {
	for _, line := range strings.Split(meminfo, "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb / (1 << 20)
			}
		}
	}
	return 0
}
