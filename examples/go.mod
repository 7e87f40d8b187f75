module github.com/dlmgo/redlock/examples

go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/dlmgo/redlock v0.1.0
	github.com/dlmgo/redlock/backends/goredis v0.1.0
	github.com/dlmgo/redlock/backends/redigo v0.1.0
	github.com/dlmgo/redlock/backends/rueidis v0.1.0
	github.com/dlmgo/redlock/backends/valkeygo v0.1.0
	github.com/dlmgo/redlock/contrib/otel v0.1.0
	go.opentelemetry.io/otel/exporters/stdout/stdoutmetric v0.44.0
	go.opentelemetry.io/otel/exporters/stdout/stdouttrace v1.21.0
	go.opentelemetry.io/otel/sdk v1.21.0
	go.opentelemetry.io/otel/sdk/metric v1.21.0
	go.opentelemetry.io/otel/trace v1.21.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/go-logr/logr v1.3.0 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/gomodule/redigo v1.8.6 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/redis/go-redis/v9 v9.0.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	github.com/valkey-io/valkey-go v1.0.79 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.opentelemetry.io/otel v1.21.0 // indirect
	go.opentelemetry.io/otel/metric v1.21.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
