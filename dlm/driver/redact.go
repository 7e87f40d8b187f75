package driver

import (
	"net/url"
	"strings"
)

// Redacted replaces a password wherever package dlm and the adapters show a
// URL.
const Redacted = "xxxxx"

// Redact returns rawURL with its password replaced by [Redacted], for use in
// errors and logs. A string that does not parse as a URL is cut at its last
// '@' so that user information cannot leak.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.LastIndex(rawURL, "@"); i >= 0 {
			scheme, _, found := strings.Cut(rawURL, "://")
			if found {
				return scheme + "://" + Redacted + "@" + rawURL[i+1:]
			}
			return Redacted + "@" + rawURL[i+1:]
		}
		return rawURL
	}
	if u.User == nil {
		return rawURL
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	}
	return u.String()
}

// RedactError returns err with every occurrence of password in its message
// replaced by [Redacted]. It is for errors from client libraries that quote
// the URL or the password they were given. The result keeps err in its chain,
// so errors.Is and errors.As still see it.
func RedactError(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), password, Redacted), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
