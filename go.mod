module github.com/dlmgo/redlock

go 1.22

require github.com/hashicorp/go-multierror v1.1.1

require github.com/hashicorp/errwrap v1.0.0 // indirect
