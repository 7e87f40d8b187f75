package rueidis_test

import (
	"os"
	"testing"

	"github.com/dlmgo/redlock/internal/testflags"
)

// TestMain runs four parallel tests at once unless -parallel says: they
// wait on TTLs and servers far more than they compute.
func TestMain(m *testing.M) {
	testflags.DefaultParallel(4)
	os.Exit(m.Run())
}
