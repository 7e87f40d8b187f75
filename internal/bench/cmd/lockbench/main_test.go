package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/bench"
)

// TestMain lets the test binary act as lockbench when a test runs it again
// with LOCKBENCH_AS_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKBENCH_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestInterruptStopsServers runs lockbench, interrupts it as Ctrl-C would
// once its servers are up, and checks that it exits with 130 and that its
// servers are gone.
func TestInterruptStopsServers(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-nodes", "3", "-run", "physical", "-duration", "60s")
	cmd.Env = append(os.Environ(), "LOCKBENCH_AS_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	started := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`at \[(.*)\]`).FindStringSubmatch(sc.Text()); m != nil {
				started <- strings.Fields(m[1])
			}
		}
		close(started)
	}()
	var addrs []string
	select {
	case addrs = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("lockbench did not report its servers within 30s")
	}
	if len(addrs) != 3 {
		t.Fatalf("lockbench reported servers %v, want 3", addrs)
	}
	time.Sleep(200 * time.Millisecond) // into the measurement
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("lockbench did not exit within 20s of SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("lockbench exited with %v, want status 130", err)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after lockbench exited", a)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Logf("dial %s: %v", a, err)
		}
	}
}

func TestParseInts(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"8,64", []int{8, 64}, true},
		{" 16 ", []int{16}, true},
		{"8,,64", nil, false},
		{"0", nil, false},
		{"x", nil, false},
	}
	for _, tt := range tests {
		got, err := parseInts(tt.in)
		if (err == nil) != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("parseInts(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseProcCases(t *testing.T) {
	tests := []struct {
		in   string
		want []bench.ProcCase
		ok   bool
	}{
		{"8x3,64x5,256x1", []bench.ProcCase{{Contenders: 8, Runs: 3}, {Contenders: 64, Runs: 5}, {Contenders: 256, Runs: 1}}, true},
		{" 64x1 ", []bench.ProcCase{{Contenders: 64, Runs: 1}}, true},
		{"64", nil, false},
		{"64x0", nil, false},
		{"0x5", nil, false},
		{"8x3,", nil, false},
		{"ax1", nil, false},
	}
	for _, tt := range tests {
		got, err := parseProcCases(tt.in)
		if (err == nil) != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("parseProcCases(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if s := joinProcCases(bench.DefaultConfig().ProcCases); s != "8x3,64x5,256x1" {
		t.Errorf("default process cases %q, want 8x3,64x5,256x1", s)
	}
}
