package dlm

import "testing"

// TestArgHiderText checks what argHider removes from a node's text: Redis'
// quotation of a refused command's arguments, in the forms of 6.x and 7.x,
// to the end of its line; and every argument of 8 bytes or more that is not
// a number, and each such part of an election's "SECRET:VALUE", wherever it
// shows.
func TestArgHiderText(t *testing.T) {
	t.Parallel()
	const secret = "XfgXwR9lbyDeMIhiQbbUhw"
	h := newArgHider([]string{secret, "30000", "l"}, []string{secret + ":leader-7:Vq7-value"}, []string{"12345678901"})
	for _, tc := range []struct{ in, want string }{
		{"ERR unknown command 'evalsha', with args beginning with: 'sha' '1' 'redlock:{k}' '" + secret + "' '30000' 'l' ",
			"ERR unknown command 'evalsha', with args beginning with: [redacted]"},
		{"ERR unknown command `evalsha`, with args beginning with: `sha`, `1`, `redlock:{k}`, `XfgX`, ",
			"ERR unknown command `evalsha`, with args beginning with: [redacted]"},
		{"ERR unknown command 'eval', with args beginning with: 'x'\nnext line " + secret,
			"ERR unknown command 'eval', with args beginning with: [redacted]\nnext line [redacted]"},
		{"ERR x" + secret + "y", "ERR x[redacted]y"},
		{"ERR " + secret + ":leader-7:Vq7-value", "ERR [redacted]"},
		{"ERR value Vq7-value, leader-7 alone", "ERR value [redacted], [redacted] alone"},
		{"ERR ttl 30000 flag l id 12345678901", "ERR ttl 30000 flag l id 12345678901"},
		{"NOPERM no permissions to run the 'evalsha' command", "NOPERM no permissions to run the 'evalsha' command"},
	} {
		if got := h.text(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
