package dlmtest

import (
	"net/url"
	"strconv"
	"strings"
)

// ShownSecret returns the form in which text shows secret, or "" when it
// shows none. The forms are those an error or a log may carry: secret as
// written; escaped for a URL's query, path or user information, with upper-
// or lower-case hex; quoted by %q or %+q, less the quotes; and secret in
// text read back, with its percent-escapes decoded, with its Go escapes
// (\", \\, \t, \xff, \u00e9) decoded, or both, which catches a secret
// written in any mixture of escapes, as a URL may carry it.
//
// The decoded readings are skipped for a secret holding '/', '?', '#', '@',
// '%' or a space: a message's own advice may spell those as escapes ("write
// %2F"). A secret with an 'x' may be made up of [driver.Redacted] and its
// neighbours; the caller decides whether to check one.
func ShownSecret(text, secret string) string {
	if secret == "" {
		return ""
	}
	for _, form := range secretForms(secret) {
		if strings.Contains(text, form) {
			return form
		}
	}
	if strings.ContainsAny(secret, "/?#@% ") {
		return ""
	}
	for _, view := range []struct {
		name string
		text string
	}{
		{"percent-decoded", percentDecode(text)},
		{"unquoted", unquote(text)},
		{"unquoted, then percent-decoded", percentDecode(unquote(text))},
		{"percent-decoded, then unquoted", unquote(percentDecode(text))},
	} {
		if strings.Contains(view.text, secret) {
			return secret + " (" + view.name + ")"
		}
	}
	return ""
}

// secretForms returns secret as written, escaped and quoted.
func secretForms(secret string) []string {
	forms := []string{secret}
	add := func(f string) {
		for _, g := range []string{f, lowerEscapes(f)} {
			if g != "" && !contains(forms, g) {
				forms = append(forms, g)
			}
		}
	}
	add(url.QueryEscape(secret))
	add(url.PathEscape(secret))
	add(strings.TrimPrefix(url.UserPassword("", secret).String(), ":"))
	for _, q := range []string{strconv.Quote(secret), strconv.QuoteToASCII(secret)} {
		if inner := q[1 : len(q)-1]; !contains(forms, inner) {
			forms = append(forms, inner)
		}
	}
	return forms
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lowerEscapes returns s with the hex digits of its %XX escapes in lower
// case.
func lowerEscapes(s string) string {
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

// percentDecode decodes every %XX escape of s, leaving a '%' that starts
// none as it is.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unquote decodes the escapes of Go's quoted strings wherever they stand
// in s, leaving a backslash that starts none as it is.
func unquote(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		if s[0] != '\\' {
			b.WriteByte(s[0])
			s = s[1:]
			continue
		}
		r, multibyte, tail, err := strconv.UnquoteChar(s, '"')
		if err != nil {
			b.WriteByte(s[0])
			s = s[1:]
			continue
		}
		if multibyte {
			b.WriteRune(r)
		} else {
			b.WriteByte(byte(r))
		}
		s = tail
	}
	return b.String()
}
