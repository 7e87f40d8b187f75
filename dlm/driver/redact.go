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

// Redact returns rawURL with what may be its password replaced by
// [Redacted], for use in errors and logs. Whatever url.Parse makes of it,
// everything between the scheme's "://" (or ":", or the start of a string
// without a well-formed scheme) and the last '@' may be user information:
// a password with an unescaped '/', '?' or '#' ends the authority early,
// and the parser takes the rest of it for a port, a path or a query. Only
// when that part holds none of those three, and the URL parses, is it the
// user information the parser saw: then the user name is kept and the
// password alone replaced. Otherwise the whole part is replaced.
func Redact(rawURL string) string {
	start, end, ok := userinfoSpan(rawURL)
	if !ok {
		return rawURL
	}
	if clearUserinfo(rawURL, start, end) {
		user, _, hasPassword := strings.Cut(rawURL[start:end], ":")
		if !hasPassword {
			return rawURL // a user without a password is not a secret
		}
		return rawURL[:start] + user + ":" + Redacted + rawURL[end:]
	}
	return rawURL[:start] + Redacted + rawURL[end:]
}

// userinfoSpan returns where what may be the user information of rawURL
// lies: from the end of its scheme prefix ([schemePrefix]) to its last '@'.
// ok is false when rawURL has no '@', and so no user information.
func userinfoSpan(rawURL string) (start, end int, ok bool) {
	end = strings.LastIndex(rawURL, "@")
	if end < 0 {
		return 0, 0, false
	}
	// A scheme holds no '@', so its prefix ends before the last one.
	return len(schemePrefix(rawURL)), end, true
}

// clearUserinfo reports whether rawURL[start:end], its userinfoSpan, is the
// user information url.Parse sees, and nothing else: rawURL starts with
// "scheme://", parses, and the span holds no '/', '?' or '#', any of which
// would end the authority before the last '@'.
func clearUserinfo(rawURL string, start, end int) bool {
	if !strings.HasSuffix(rawURL[:start], "://") || strings.ContainsAny(rawURL[start:end], "/?#") {
		return false
	}
	u, err := url.Parse(rawURL)
	return err == nil && u.User != nil
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
