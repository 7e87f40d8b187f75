module github.com/dlmgo/redlock/internal/bench

go 1.26.0

require (
	github.com/dlmgo/redlock v0.1.0
	github.com/dlmgo/redlock/backends/goredis v0.1.0
	github.com/dlmgo/redlock/backends/redigo v0.1.0
	github.com/dlmgo/redlock/backends/rueidis v0.1.0
	github.com/dlmgo/redlock/backends/valkeygo v0.1.0
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	github.com/valkey-io/valkey-go v1.0.79 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)
