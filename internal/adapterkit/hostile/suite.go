package hostile

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/adapterkit"
)

// Headers are the replies of TestReplyLimit's hostile node, fifteen bytes
// or so each, with which a client library that believes them allocates
// tens of gigabytes or more and the process dies ("fatal error: runtime:
// out of memory", which no recover catches).
var Headers = []string{
	"*10000000000\r\n", "$1000000000000\r\n", "%10000000000\r\n", "~10000000000\r\n", ">10000000000\r\n",
	"*1\r\n*1\r\n$1000000000000\r\n",
}

// TestReplyLimit checks, through the driver registered as name, the reply
// limit of the nodes it opens from URLs ([adapterkit.LimitReplies]): a script
// call or a SUBSCRIBE answered by one of [Headers] fails, with an error
// that wraps [adapterkit.ErrReplyLimit] for a script call, and the process
// lives on. It must not run beside other tests: TestReplyLimit/Allocation
// counts the bytes the whole process allocates.
func TestReplyLimit(t *testing.T, name string) {
	for _, h := range Headers {
		t.Run(fmt.Sprintf("Eval%q", h), func(t *testing.T) {
			n := open(t, "redis+"+name+"://"+Start(t, h)+"?dial_timeout=2s")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := n.Eval(ctx, driver.NewScript("return 1"), []string{"k"}, []string{"a"})
			if !errors.Is(err, adapterkit.ErrReplyLimit) {
				t.Fatalf("Eval answered %q: %v; want an error that wraps ErrReplyLimit", h, err)
			}
		})
		t.Run(fmt.Sprintf("Subscribe%q", h), func(t *testing.T) {
			n := open(t, "redis+"+name+"://"+Start(t, h)+"?dial_timeout=2s")
			// rueidis and valkey-go dial the refused connection again
			// until the context ends: a short one.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			sub, err := n.(driver.Subscriber).Subscribe(ctx, handler{})
			if err != nil {
				return // refused as the library subscribed
			}
			defer sub.Close()
			if err := sub.Subscribe(ctx, "ch"); err != nil {
				return
			}
			select {
			case <-sub.Done():
			case <-ctx.Done():
				t.Fatalf("the subscription answered %q did not end", h)
			}
		})
	}
	t.Run("Allocation", func(t *testing.T) {
		// 100 MB announced, sent never: what the library allocates on
		// the header alone, with the limit and without it.
		const header, size = "$100000000\r\n", 100_000_000
		addr := Start(t, header)
		limited := allocated(t, "redis+"+name+"://"+addr+"?dial_timeout=2s")
		unlimited := allocated(t, "redis+"+name+"://"+addr+"?dial_timeout=2s&reply_limit=none")
		t.Logf("allocated during a script call answered %q: %d bytes under the default limit, %d with reply_limit=none", header, limited, unlimited)
		if limited >= size/2 {
			t.Errorf("allocated %d bytes during a script call answered %q under the default reply limit; want well below %d", limited, header, size)
		}
		if unlimited < size {
			t.Errorf("allocated %d bytes during a script call answered %q with reply_limit=none; want %d or more: the library no longer believes the header, and this test shows nothing", unlimited, header, size)
		}
	})
}

// allocated returns the bytes the process allocated during one script call
// through a node opened from url.
func allocated(t *testing.T, url string) uint64 {
	n := open(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := n.Eval(ctx, driver.NewScript("return 1"), []string{"k"}, []string{"a"})
	runtime.ReadMemStats(&after)
	if err == nil || strings.Contains(url, "reply_limit=none") == errors.Is(err, adapterkit.ErrReplyLimit) {
		t.Errorf("Eval through %s: %v", url, err)
	}
	return after.TotalAlloc - before.TotalAlloc
}

func open(t *testing.T, url string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(url)
	if err != nil {
		t.Fatalf("OpenNode(%q): %v", url, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

type handler struct{}

func (handler) Message(channel, payload string) {}
func (handler) Subscribed(channel string)       {}
