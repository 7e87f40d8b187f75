package bench

import (
	"maps"
	"math"
	"testing"
	"time"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=120,usec=900,usec_per_call=7.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=240,usec=100,usec_per_call=0.42,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setname:calls=5,usec=3,usec_per_call=0.60,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=2,usec=80,usec_per_call=40.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_bad:usec=1\r\n" +
		"cmdstat_neg:calls=-4\r\n" +
		"cmdstat_:calls=9\r\n" +
		"used_cpu_sys:1.5\r\n"
	want := map[string]int64{"evalsha": 120, "get": 240, "client|setname": 5, "info": 2}
	if got := parseCommandStats(info); !maps.Equal(got, want) {
		t.Errorf("parseCommandStats = %v, want %v", got, want)
	}
}

func TestServerSampleSince(t *testing.T) {
	before := serverSample{ok: true, cpu: time.Second, commands: map[string]int64{"evalsha": 100, "get": 50, "info": 10}}
	after := serverSample{ok: true, cpu: 1500 * time.Millisecond, commands: map[string]int64{"evalsha": 160, "get": 50, "set": 7, "info": 14}}
	cpu, cmds, ok := after.since(before)
	if !ok || cpu != 500*time.Millisecond {
		t.Fatalf("since = %v, %v, %v; want 500ms, ok", cpu, cmds, ok)
	}
	// The harness's own INFO is left out; commands not called are absent.
	if want := map[string]int64{"evalsha": 60, "set": 7}; !maps.Equal(cmds, want) {
		t.Errorf("commands %v, want %v", cmds, want)
	}
	if _, _, ok := after.since(serverSample{}); ok {
		t.Error("since a sample the servers did not answer is ok")
	}
	if _, _, ok := (serverSample{ok: true, cpu: 0}).since(before); ok {
		t.Error("since a later sample with less CPU time (a server restarted) is ok")
	}
}

// TestPerHandoff checks the arithmetic of the servers' work per hand-off.
func TestPerHandoff(t *testing.T) {
	h := HotResult{Handoffs: 40, Commands: map[string]int64{"evalsha": 300, "publish": 100}, ServerCPU: 80 * time.Millisecond}
	if got := h.CommandsPerHandoff(); got != 10 {
		t.Errorf("CommandsPerHandoff = %v, want 10", got)
	}
	if got := h.ServerCPUPerHandoff(); got != 2*time.Millisecond {
		t.Errorf("ServerCPUPerHandoff = %v, want 2ms", got)
	}
	for _, k := range []serverWork{serverCommands, serverCPU} {
		if x, text := k.perHandoff(&HotResult{Handoffs: 0, Commands: map[string]int64{}, ServerCPU: time.Second}); !math.IsInf(x, 1) || text != "no hand-offs" {
			t.Errorf("%v per hand-off without hand-offs = %v, %q; want +Inf, no hand-offs", k, x, text)
		}
		if x, text := k.perHandoff(&HotResult{Handoffs: 3}); !math.IsNaN(x) || text != "not counted" {
			t.Errorf("%v per hand-off not counted = %v, %q; want NaN, not counted", k, x, text)
		}
	}
}

func TestCommandsPer(t *testing.T) {
	got := commandsPer(map[string]int64{"get": 20, "evalsha": 30, "del": 10, "set": 20}, 10)
	if want := "evalsha 3.00, get 2.00, set 2.00, del 1.00"; got != want {
		t.Errorf("commandsPer = %q; want %q", got, want)
	}
}
