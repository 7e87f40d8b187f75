package main

import (
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What a node says — its error replies, an election's value — is
// untrusted text, and so is what a tamperer on a plaintext link makes of
// it: written raw to a terminal, an escape sequence could clear the screen,
// rewrite earlier lines, set the window title or, on some terminals, send
// keys. redlock writes none of it as it is. Its logs quote such text
// (slog's text handler escapes what is not printable); its tables go
// through printable; its JSON, which encoding/json and slog escape only
// below U+0020, through jsonWriter.

// printable returns s with every character a terminal may act on written
// as its Go escape (\x1b, \n, \t, \u009b, \u202e, \x9b): the C0 controls,
// DEL, the C1 controls, Unicode's other non-printing characters (format
// characters such as the bidirectional overrides, line and paragraph
// separators), and bytes that are not UTF-8. Printable text, spaces
// included, is left as it is.
func printable(s string) string {
	if isPrintable(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b = append(b, s[i:i+n]...)
		default:
			q := strconv.QuoteRune(r)
			b = append(b, q[1:len(q)-1]...)
		}
		i += n
	}
	return string(b)
}

// isPrintable reports whether printable would leave s as it is.
func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || !unicode.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// jsonWriter writes JSON to w with the non-printing characters that JSON
// encoders leave as they are — DEL, the C1 controls, Unicode's format
// characters — written as \u escapes, which decode to the same text.
// Outside strings, JSON holds only ASCII that prints and the white space
// between tokens, so only strings change. Each Write should be whole
// values, as json.Encoder and slog's JSON handler write them.
type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(escapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeJSON returns p, JSON, with the characters jsonWriter escapes
// escaped. The encoders escape the C0 controls themselves, and replace
// bytes that are not UTF-8 with U+FFFD, as escapeJSON does should one
// come.
func escapeJSON(p []byte) []byte {
	var out []byte // nil until a character needs escaping
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		invalid := r == utf8.RuneError && n == 1
		if !invalid && ((r < utf8.RuneSelf && r != 0x7f) || unicode.IsPrint(r)) {
			if out != nil {
				out = append(out, p[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(p)+16), p[:i]...)
		}
		switch r1, r2 := utf16.EncodeRune(r); {
		case invalid:
			out = append(out, `\ufffd`...)
		case r1 != unicode.ReplacementChar:
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	if out == nil {
		return p
	}
	return out
}
