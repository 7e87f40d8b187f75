package adapterkit

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

func TestKeySlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want uint16
	}{
		// CRC16/XMODEM's check value is 0x31C3 for "123456789".
		{"a", 15495}, {"b", 3300}, {"123456789", 0x31C3}, {"", 0},
	} {
		if got := KeySlot(tc.key); got != tc.want {
			t.Errorf("KeySlot(%q) = %d; want %d", tc.key, got, tc.want)
		}
	}
	if KeySlot("{o}:a") != KeySlot("o") || KeySlot("x{o}y{z}") != KeySlot("o") || KeySlot("{}a") == KeySlot("") {
		t.Error("KeySlot does not hash a key's first tag alone, or hashes an empty tag")
	}
}

func TestParseSlots(t *testing.T) {
	t.Parallel()
	reply := []any{
		[]any{int64(0), int64(5460), []any{"127.0.0.1", int64(7000), "id0"}, []any{"127.0.0.1", int64(7003), "id3"}},
		[]any{int64(5461), int64(16383), []any{"10.0.0.2", int64(7001), "id1"}},
	}
	got, err := parseSlots("fake", reply)
	want := []slotRange{{0, 5460, "127.0.0.1:7000"}, {5461, 16383, "10.0.0.2:7001"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseSlots = %v, %v; want %v, nil", got, err, want)
	}
	for _, bad := range []any{
		"OK", []any{"row"}, []any{[]any{int64(0), int64(1)}}, []any{[]any{"0", int64(1), []any{"h", int64(1)}}},
		[]any{[]any{int64(0), int64(1), []any{"h"}}},
	} {
		if _, err := parseSlots("fake", bad); err == nil || !strings.HasPrefix(err.Error(), "fake: CLUSTER SLOTS: unexpected") {
			t.Errorf("parseSlots(%v) = %v; want an error of fake's about the reply", bad, err)
		}
	}
}

func TestNewClientOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url       string
		addrs     []string
		cluster   bool
		sentinels string
	}{
		{"redis://u:pw@h:1/2?dial_timeout=50ms&write_timeout=70ms", []string{"h:1"}, false, ""},
		{"redis://h:1?cluster=true&addr=h:3&addr=h:2", []string{"h:1", "h:2", "h:3"}, true, ""},
		{"redis://s:1?sentinel_master=m&addr=s:2", []string{"s:1", "s:2"}, false, "m"},
	} {
		cfg, err := driver.ParseURL(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		o := NewClientOptions(cfg)
		if !reflect.DeepEqual(o.InitAddress, tc.addrs) || o.Cluster != tc.cluster || o.SentinelMaster != tc.sentinels {
			t.Errorf("NewClientOptions(%q): InitAddress %q, Cluster %v, SentinelMaster %q; want %q, %v, %q",
				tc.url, o.InitAddress, o.Cluster, o.SentinelMaster, tc.addrs, tc.cluster, tc.sentinels)
		}
		if o.Username != cfg.Username || o.Password != cfg.Password || o.DB != cfg.DB ||
			o.Dialer.Timeout != cfg.DialTimeout || o.WriteTimeout != cfg.WriteTimeout {
			t.Errorf("NewClientOptions(%q) = %+v; want the URL's user, password, database and timeouts", tc.url, o)
		}
	}
	cfg, _ := driver.ParseURL("redis://h:1?dial_timeout=50ms&write_timeout=70ms")
	if o := NewClientOptions(cfg); o.Dialer.Timeout != 50*time.Millisecond || o.WriteTimeout != 70*time.Millisecond {
		t.Errorf("NewClientOptions: dial %v, write %v; want 50ms, 70ms", o.Dialer.Timeout, o.WriteTimeout)
	}
}
