package redigo

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
)

// TestOpenRefusesTopologies checks that cluster and Sentinel URLs are
// refused with ErrUnsupported, naming the backends that support them,
// before any connection.
func TestOpenRefusesTopologies(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis+redigo://:s3cret@127.0.0.1:1?cluster=true&addr=127.0.0.1:2",
		"redis+redigo://:s3cret@127.0.0.1:1?sentinel_master=mymaster",
	} {
		_, err := dlm.OpenNode(url)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "redis+goredis://") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenNode(%q) = %v; want ErrUnsupported naming the other backends, without the password", url, err)
		}
	}
}
