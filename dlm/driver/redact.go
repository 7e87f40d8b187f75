package driver

import (
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Redacted replaces a password wherever package dlm and the adapters show a
// URL.
const Redacted = "xxxxx"

// Redact returns rawURL with its password replaced by [Redacted], for use in
// errors and logs. A string that does not parse as a URL, or that has user
// information outside an authority ("redis:user:pass@host"), is cut at its
// last '@' so that user information cannot leak.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	switch {
	case err != nil, u.User == nil && u.Host == "" && strings.Contains(u.Opaque+u.Path, "@"):
		// Cut below.
	case u.User == nil:
		return rawURL
	default:
		if _, has := u.User.Password(); !has {
			return rawURL
		}
		u.User = url.UserPassword(u.User.Username(), Redacted)
		return u.String()
	}
	i := strings.LastIndex(rawURL, "@")
	if i < 0 {
		return rawURL
	}
	return schemePrefix(rawURL) + Redacted + "@" + rawURL[i+1:]
}

// schemePrefix returns the "scheme://" or "scheme:" that s starts with, or ""
// when s does not start with a well-formed scheme (which could then hold
// anything, a password included).
func schemePrefix(s string) string {
	scheme, rest, found := strings.Cut(s, ":")
	if !found || scheme == "" {
		return ""
	}
	for i, c := range scheme {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return ""
		}
	}
	if strings.HasPrefix(rest, "//") {
		return scheme + "://"
	}
	return scheme + ":"
}

// RedactError returns err with every occurrence of password in its message
// replaced by [Redacted], in the forms a URL may carry it too: escaped for a
// query, a path or user information, with upper- or lower-case hex. It is for
// errors from client libraries that quote the URL or the password they were
// given. The result keeps err in its chain, so errors.Is and errors.As still
// see it.
func RedactError(err error, password string) error {
	if err == nil || password == "" {
		return err
	}
	msg := err.Error()
	redacted := redactString(msg, password)
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// redactString replaces every form of password in s by [Redacted].
func redactString(s, password string) string {
	if password == "" {
		return s
	}
	for _, form := range passwordForms(password) {
		s = strings.ReplaceAll(s, form, Redacted)
	}
	return s
}

// passwordForms returns password as written plain and escaped, longest
// first, so that an escaped form is replaced whole before the plain one
// could cut into it.
func passwordForms(password string) []string {
	forms := []string{password}
	for _, f := range []string{
		url.QueryEscape(password),
		url.PathEscape(password),
		strings.TrimPrefix(url.UserPassword("", password).String(), ":"),
	} {
		for _, g := range []string{f, lowerHex(f)} {
			if !slices.Contains(forms, g) {
				forms = append(forms, g)
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return forms
}

// lowerHex returns s with the hex digits of its %XX escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
