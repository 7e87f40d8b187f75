package resp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

var _ driver.Subscriber = (*Node)(nil)

// Subscribe opens a connection of its own for pub/sub and starts reading it.
// The reading goroutine ends when the connection is closed or fails.
func (n *Node) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	c, err := Dial(ctx, &n.cfg)
	if err != nil {
		return nil, err
	}
	// Pushed messages come whenever they come: no read deadline.
	if err := c.raw.SetReadDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("resp: %s: %w", c.addr, err)
	}
	s := &subscription{c: c, h: h, done: make(chan struct{})}
	go s.read()
	return s, nil
}

// subscription is a connection in pub/sub mode: one goroutine reads what the
// server pushes, callers write SUBSCRIBE and UNSUBSCRIBE.
type subscription struct {
	c    *Conn
	h    driver.PubSubHandler
	mu   sync.Mutex // serializes writes
	done chan struct{}
}

func (s *subscription) read() {
	defer close(s.done)
	defer s.c.raw.Close()
	for {
		v, err := readReply(s.c.br)
		if err != nil {
			return
		}
		push, ok := v.([]any)
		if !ok || len(push) < 2 {
			return // not pub/sub: out of step
		}
		kind, _ := push[0].(string)
		channel, _ := push[1].(string)
		switch kind {
		case "message":
			payload := ""
			if len(push) > 2 {
				payload, _ = push[2].(string)
			}
			s.h.Message(channel, payload)
		case "subscribe":
			s.h.Subscribed(channel)
		}
	}
}

func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "SUBSCRIBE", channels)
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	return s.send(ctx, "UNSUBSCRIBE", channels)
}

func (s *subscription) send(ctx context.Context, cmd string, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return fmt.Errorf("resp: %s: subscription ended", s.c.addr)
	default:
	}
	err := s.c.raw.SetWriteDeadline(s.c.deadline(ctx, s.c.writeTimeout))
	if err == nil {
		err = writeCommand(s.c.bw, append([]string{cmd}, channels...))
	}
	if err != nil {
		s.c.raw.Close() // the reader sees it and ends the subscription
		return fmt.Errorf("resp: %s: %s: %w", s.c.addr, cmd, err)
	}
	return nil
}

func (s *subscription) Done() <-chan struct{} { return s.done }

// Close closes the connection and waits for the reader to end.
func (s *subscription) Close() error {
	err := s.c.Close()
	<-s.done
	return err
}
