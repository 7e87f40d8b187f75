package adapterkit

import (
	"errors"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Panics turns a panic in a client library into a [driver.PanicError], so
// that it fails the call on one node and never takes the program down. Its
// zero value recovers with an empty client name and redacts nothing.
type Panics struct {
	// Client is the adapter's name, as [driver.PanicError.Client].
	Client string
	// Password is redacted from the panic's text, when not empty.
	Password string
}

// RecoverTo sets *err to a [driver.PanicError] when the caller panicked. It
// must be deferred directly: defer p.RecoverTo(&err).
func (p Panics) RecoverTo(err *error) {
	if r := recover(); r != nil {
		*err = driver.Recover(p.Client, r, p.Password)
	}
}

// Close calls close, with a panic in it turned into a [driver.PanicError].
func (p Panics) Close(close func() error) (err error) {
	defer p.RecoverTo(&err)
	return close()
}

// Do calls f, returning a panic in it as a [driver.PanicError] and nil
// otherwise.
func (p Panics) Do(f func()) (err error) {
	defer p.RecoverTo(&err)
	f()
	return nil
}

// Call calls f, with a panic in it turned into a [driver.PanicError] and a
// nil value.
func (p Panics) Call(f func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, driver.Recover(p.Client, r, p.Password)
		}
	}()
	return f()
}

// IsPanic reports whether err is a [driver.PanicError].
func IsPanic(err error) bool {
	var perr *driver.PanicError
	return errors.As(err, &perr)
}
