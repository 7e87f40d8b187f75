module github.com/dlmgo/redlock/backends/valkeygo

go 1.25.0

require (
	github.com/dlmgo/redlock v0.1.0
	github.com/valkey-io/valkey-go v1.0.79
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
