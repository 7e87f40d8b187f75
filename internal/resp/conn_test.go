package resp

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

func dialFake(t *testing.T, s *fakeServer, cfg driver.Config) *Conn {
	t.Helper()
	cfg.Addr = s.addr()
	c, err := Dial(context.Background(), &cfg)
	if err != nil {
		t.Fatalf("Dial(%s): %v", cfg.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialSendsAuthAndSelect(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  driver.Config
		want [][]string
	}{
		{"nothing to send", driver.Config{}, nil},
		{"password", driver.Config{Password: "pw"}, [][]string{{"AUTH", "pw"}}},
		{"user and password", driver.Config{Username: "u", Password: "pw", DB: 3},
			[][]string{{"AUTH", "u", "pw"}, {"SELECT", "3"}}},
		{"database", driver.Config{DB: 15}, [][]string{{"SELECT", "15"}}},
	} {
		s := startFake(t, "+OK\r\n", "+OK\r\n")
		dialFake(t, s, tc.cfg)
		if got := s.commands(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Dial sent %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestDialRefusedAuth(t *testing.T) {
	s := startFake(t, "-WRONGPASS invalid username-password pair\r\n")
	_, err := Dial(context.Background(), &driver.Config{Addr: s.addr(), Password: "secret"})
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "secret") {
		t.Errorf("Dial with a refused password = %v; want the WRONGPASS error, without the password", err)
	}
}

func TestDialDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := startFake(t)
	if _, err := Dial(ctx, &driver.Config{Addr: s.addr()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial with a cancelled context = %v; want context.Canceled", err)
	}
}

func TestDoInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		cfg  driver.Config
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, driver.Config{}, context.DeadlineExceeded},
		{"deadline before read timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, driver.Config{ReadTimeout: 50 * time.Millisecond}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, driver.Config{}, context.Canceled},
		{"read timeout", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, driver.Config{ReadTimeout: 50 * time.Millisecond}, os.ErrDeadlineExceeded},
	} {
		s := startFake(t) // never answers
		c := dialFake(t, s, tc.cfg)
		ctx, cancel := tc.ctx()
		start := time.Now()
		_, err := c.Do(ctx, "PING")
		took := time.Since(start)
		cancel()
		if !errors.Is(err, tc.want) || took > time.Second {
			t.Errorf("%s: Do on a silent server = %v after %v; want %v within a second", tc.name, err, took, tc.want)
		}
		if _, err := c.Do(context.Background(), "PING"); err == nil || !strings.Contains(err.Error(), "broken") {
			t.Errorf("%s: Do after an interrupted Do = %v; want a broken-connection error", tc.name, err)
		}
	}
}

func TestDoDoneContextKeepsConn(t *testing.T) {
	s := startFake(t, "+PONG\r\n")
	c := dialFake(t, s, driver.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, "PING"); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled context = %v; want context.Canceled", err)
	}
	if v, err := c.Do(context.Background(), "PING"); v != "PONG" || err != nil {
		t.Errorf("Do after a refused Do = %#v, %v; want PONG: nothing was sent, the connection is fine", v, err)
	}
}

func TestDoReplies(t *testing.T) {
	s := startFake(t, "-ERR first\r\n", ":7\r\n", "?broken\r\n", "+never read\r\n")
	c := dialFake(t, s, driver.Config{})
	ctx := context.Background()
	if v, err := c.Do(ctx, "X"); v != nil || err != Error("ERR first") {
		t.Errorf("Do answered by an error reply = %#v, %v; want nil, Error(ERR first)", v, err)
	}
	if v, err := c.Do(ctx, "X"); v != int64(7) || err != nil {
		t.Errorf("Do after an error reply = %#v, %v; want 7, nil: error replies keep the connection", v, err)
	}
	if _, err := c.Do(ctx, "X"); !errors.Is(err, errProtocol) {
		t.Errorf("Do answered by garbage = %v; want a protocol error", err)
	}
	if _, err := c.Do(ctx, "X"); err == nil {
		t.Error("Do after a protocol error succeeded; want the connection broken")
	}
}

func TestDoExtraBytesBreakConn(t *testing.T) {
	s := startFake(t, "+OK\r\n+unasked\r\n")
	c := dialFake(t, s, driver.Config{})
	if _, err := c.Do(context.Background(), "X"); !errors.Is(err, errProtocol) {
		t.Errorf("Do answered by two replies = %v; want a protocol error", err)
	}
}
