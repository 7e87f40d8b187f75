module github.com/dlmgo/redlock/backends/redigo

go 1.22

require (
	github.com/dlmgo/redlock v0.1.0
	github.com/gomodule/redigo v1.8.6
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
)
