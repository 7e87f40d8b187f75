package dlm

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReplicaAckInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"no replicas", []Option{WithReplicaAck(0, 10*time.Millisecond)}, "at least 1"},
		{"WAIT 0", []Option{WithReplicaAck(1, 0)}, "WAIT 0"},
		{"timeout over the node timeout", []Option{WithNodeTimeout(50 * time.Millisecond), WithReplicaAck(1, 50*time.Millisecond)}, "node timeout"},
		{"node without driver.ReplicaAcker", []Option{WithReplicaAck(1, 10*time.Millisecond)}, "ReplicaAcker"},
	} {
		_, err := New(asNodes(newFakes(3)), tc.opts...)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want ErrInvalid about %q", tc.name, err, tc.want)
		}
	}
}
