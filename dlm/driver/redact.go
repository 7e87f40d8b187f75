package driver

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
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

// RedactOrigin returns what an error shows of a node URL: its scheme, its
// user name, [Redacted] for its password, and its host and port, but not
// its path, query or fragment, which a mark ("/...", "?...", "#...") stands
// for. A URL's database, parameters and file names may repeat a password,
// in any mixture of escapes no redaction knows; and the parameters may be
// secrets themselves (password=, sentinel_password=), which no URL that
// [ParseURL] accepts holds but a refused one may. A host that does not
// parse as one is replaced by "..." too.
func RedactOrigin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if start, end, ok := userinfoSpan(rawURL); err != nil || ok && !clearUserinfo(rawURL, start, end) {
		return shownURL(rawURL, nil, "")
	}
	password := ""
	if u.User != nil {
		password, _ = u.User.Password()
	}
	return shownURL(rawURL, u, password)
}

// shownURL is [RedactOrigin] of rawURL, which parses as u, the password of
// which is password; or, with u nil, of a URL that does not parse, or
// whose user information is unclear (see [clearUserinfo]), built from
// [Redact] of the raw text: its scheme, and its user name and host only
// when they hold nothing but the characters of plain names.
func shownURL(rawURL string, u *url.URL, password string) string {
	if u != nil && u.Opaque == "" {
		// From the parsed, decoded parts, each scrubbed of the
		// password before it is escaped again: an escape of the raw
		// text is no form redaction knows.
		v := url.URL{Host: redactString(u.Host, password)}
		if u.User != nil {
			name := redactString(u.User.Username(), password)
			if _, ok := u.User.Password(); ok {
				v.User = url.UserPassword(name, Redacted)
			} else {
				v.User = url.User(name)
			}
		}
		// "//USER@HOST", or "" for neither.
		s := u.Scheme + ":" + v.String()
		if v.Host == "" && v.User == nil {
			s += "//"
		}
		switch {
		case u.Path != "":
			s += "/..."
		case u.RawQuery != "" || u.ForceQuery:
			s += "?..."
		case u.Fragment != "":
			s += "#..."
		}
		return s
	}
	r := Redact(rawURL)
	prefix := schemePrefix(r)
	rest := r[len(prefix):]
	if strings.HasPrefix(rest, "//") {
		prefix, rest = prefix+"//", rest[2:]
	}
	authority, mark := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, mark = rest[:i], rest[i:i+1]+"..."
	}
	user, host, hasUser := "", authority, false
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		user, host, hasUser = authority[:i], authority[i+1:], true
	}
	if !plainName(host) {
		host = "..."
	}
	if hasUser {
		// Redact left the user information as NAME:xxxxx, xxxxx or a
		// bare NAME.
		name, _, _ := strings.Cut(user, ":")
		switch {
		case !plainName(name):
			user = Redacted
		case strings.Contains(user, ":"):
			user = name + ":" + Redacted
		default:
			user = name
		}
		host = user + "@" + host
	}
	return redactStrings(prefix+host+mark, maybePasswords(rawURL))
}

// plainName reports whether s holds only letters, digits and "._-:[]", the
// characters of host names, ports, IP addresses and most user names: text
// that carries no escape.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._-:[]", c) >= 0) {
			return false
		}
	}
	return true
}

// maybePasswords returns what may be the password of rawURL, as written
// and decoded, when rawURL has user information with a ':' (see
// [userinfoSpan]); for errors about a URL that does not parse, whose
// password url.Parse does not give.
func maybePasswords(rawURL string) []string {
	start, end, ok := userinfoSpan(rawURL)
	if !ok {
		return nil
	}
	_, pw, ok := strings.Cut(rawURL[start:end], ":")
	if !ok || pw == "" {
		return nil
	}
	out := []string{pw}
	if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
		out = append(out, dec)
	}
	return out
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

// redactStrings replaces every form of each of passwords in s by
// [Redacted].
func redactStrings(s string, passwords []string) string {
	for _, p := range passwords {
		s = redactString(s, p)
	}
	return s
}

// passwordForms returns password as written plain, escaped, and quoted by
// %q or %+q (less the quotes: a password with a '"', a '\', a tab or a
// byte of 0x80 or above is written otherwise there), longest first, so
// that a longer form is replaced whole before a shorter one could cut into
// it.
func passwordForms(password string) []string {
	forms := []string{password}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, f := range []string{
		url.QueryEscape(password),
		url.PathEscape(password),
		strings.TrimPrefix(url.UserPassword("", password).String(), ":"),
	} {
		add(f)
		add(lowerHex(f))
	}
	for _, q := range []string{strconv.Quote(password), strconv.QuoteToASCII(password)} {
		add(q[1 : len(q)-1])
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
