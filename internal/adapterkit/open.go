package adapterkit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/dlmgo/redlock/dlm/driver"
)

// CheckOpen is the end of every adapter's [driver.Driver.Open]: it checks
// the server with [driver.CheckOpen] within cfg's dial timeout, through do
// and errorReply as that function takes them. When the server turns the
// node's settings down, it calls closeNode and returns the server's error as
// "CLIENT: connect ADDR: ...", without the password.
func CheckOpen(cfg *driver.Config, client, addr string, do func(ctx context.Context, args ...string) error, errorReply func(error) (string, bool), closeNode func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	if err := driver.CheckOpen(ctx, cfg, do, errorReply); err != nil {
		closeNode()
		return fmt.Errorf("%s: connect %s: %w", client, addr, err)
	}
	return nil
}

// Refused reports whether err, from a client library that connects and
// greets the server in one step, says that the server turned the node's
// settings down, which trying again will not change: an error reply
// (found by errorReply) that is not [driver.Transient], a TLS certificate
// that does not verify, or a panic of the library ([driver.PanicError]).
// Any other failure leaves the server as good as unreachable for now.
func Refused(err error, errorReply func(error) (string, bool)) bool {
	if reply, ok := errorReply(err); ok {
		return !driver.Transient(reply)
	}
	if IsPanic(err) {
		return true
	}
	var cert *tls.CertificateVerificationError
	return errors.As(err, &cert)
}

// Args returns args as the []any of a client library that takes a command
// so.
func Args(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
