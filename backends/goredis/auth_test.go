package goredis

import (
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/dlmtest"
)

const echo = "return ARGV[1]"

func TestPassword(t *testing.T) {
	s := dlmtest.StartServer(t, dlmtest.WithArgs("--requirepass", "s3cret"))
	n := openNode(t, "redis+goredis://:s3cret@"+s.Addr())
	if v, err := eval(n, echo, nil, []string{"hi"}); v != "hi" || err != nil {
		t.Errorf("Eval with the right password = %v, %v; want hi, nil", v, err)
	}
	for _, tc := range []struct{ url, code string }{
		{"redis+goredis://:wr0ngpw@" + s.Addr(), "WRONGPASS"},
		{"redis+goredis://" + s.Addr(), "NOAUTH"},
	} {
		n, err := dlm.OpenNode(tc.url)
		if err == nil {
			n.Close()
			t.Errorf("OpenNode(%q) = nil error; want %s", tc.url, tc.code)
			continue
		}
		if !strings.Contains(err.Error(), tc.code) || strings.Contains(err.Error(), "wr0ngpw") {
			t.Errorf("OpenNode(%q) = %v; want %s, without the password", tc.url, err, tc.code)
		}
	}
}

func TestACLUser(t *testing.T) {
	s := dlmtest.StartServer(t)
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", "alice", "on", ">pw-alice", "~*", "+@all"},
		{"ACL", "SETUSER", "bob", "on", ">pw-bob", "~bob:*", "+@all"},
	} {
		if _, err := s.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd[:3], err)
		}
	}
	alice := openNode(t, "redis+goredis://alice:pw-alice@"+s.Addr())
	if v, err := eval(alice, "return redis.call('SET', KEYS[1], 'x')", []string{"any"}, nil); v != "OK" || err != nil {
		t.Errorf("alice SET = %v, %v; want OK, nil", v, err)
	}
	bob := openNode(t, "redis+goredis://bob:pw-bob@"+s.Addr())
	if v, err := eval(bob, "return redis.call('SET', KEYS[1], 'x')", []string{"bob:1"}, nil); v != "OK" || err != nil {
		t.Errorf("bob SET bob:1 = %v, %v; want OK, nil", v, err)
	}
	if v, err := eval(bob, "return redis.call('SET', KEYS[1], 'x')", []string{"alice:1"}, nil); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("bob SET alice:1 = %v, %v; want a NOPERM error", v, err)
	}
	n, err := dlm.OpenNode("redis+goredis://alice:pw-bob@" + s.Addr())
	if err == nil {
		n.Close()
		t.Fatal("OpenNode as alice with bob's password: nil error; want WRONGPASS")
	}
	if !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "pw-bob") {
		t.Errorf("OpenNode as alice with bob's password = %v; want WRONGPASS without the password", err)
	}
}

func TestDatabase(t *testing.T) {
	s := dlmtest.StartServer(t)
	set := "return redis.call('SET', KEYS[1], ARGV[1])"
	get := "return redis.call('GET', KEYS[1])"
	if _, err := eval(openNode(t, "redis+goredis://"+s.Addr()+"/3"), set, []string{"k"}, []string{"in3"}); err != nil {
		t.Fatalf("SET in db 3: %v", err)
	}
	for _, tc := range []struct {
		url  string
		want any
	}{
		{"redis+goredis://" + s.Addr(), nil},
		{"redis+goredis://" + s.Addr() + "/0", nil},
		{"redis+goredis://" + s.Addr() + "/3", "in3"},
		{"redis+goredis://" + s.Addr() + "?db=3", "in3"},
	} {
		if v, err := eval(openNode(t, tc.url), get, []string{"k"}, nil); v != tc.want || err != nil {
			t.Errorf("GET k through %s = %v, %v; want %v, nil", tc.url, v, err, tc.want)
		}
	}
	n, err := dlm.OpenNode("redis+goredis://" + s.Addr() + "/99")
	if err == nil {
		n.Close()
		t.Error("OpenNode of database 99 (of 16): nil error; want ERR DB index is out of range")
	}
}
