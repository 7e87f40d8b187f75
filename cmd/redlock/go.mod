module github.com/dlmgo/redlock/cmd/redlock

go 1.25.0

require (
	github.com/dlmgo/redlock v0.1.0
	github.com/dlmgo/redlock/backends/goredis v0.1.0
	github.com/dlmgo/redlock/backends/redigo v0.1.0
	github.com/dlmgo/redlock/backends/rueidis v0.1.0
	github.com/dlmgo/redlock/backends/valkeygo v0.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/gomodule/redigo v1.8.6 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/redis/go-redis/v9 v9.0.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	github.com/valkey-io/valkey-go v1.0.79 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
