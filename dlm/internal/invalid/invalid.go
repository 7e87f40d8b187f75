// Package invalid holds the error for bad input that package dlm exports
// as dlm.ErrInvalid, so that package driver, which dlm imports and which
// therefore cannot import dlm, can make its own errors for bad input match
// it: every error wrapping driver.ErrBadURL matches dlm.ErrInvalid too.
package invalid

import "errors"

// Err is dlm.ErrInvalid.
var Err = errors.New("dlm: invalid argument")
