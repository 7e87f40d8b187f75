package bench

import (
	"context"
	"strconv"
	"time"
)

// serversCPU returns the CPU time, user and system, the servers at addrs
// have used since they started, from INFO cpu, or 0 when a server does not
// tell.
func serversCPU(ctx context.Context, addrs []string) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var total time.Duration
	for _, a := range addrs {
		c, err := dialRESP(ctx, a)
		if err != nil {
			return 0
		}
		v, err := c.do("INFO", "cpu")
		c.Close()
		info, _ := v.(string)
		if err != nil || info == "" {
			return 0
		}
		for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
			s, err := strconv.ParseFloat(infoField(info, f), 64)
			if err != nil {
				return 0
			}
			total += time.Duration(s * float64(time.Second))
		}
	}
	return total
}
