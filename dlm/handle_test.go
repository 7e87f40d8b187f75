package dlm

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestHandleNeverPrintsSecret checks that a Handle printed with any verb
// of package fmt, alone, by pointer or inside a slice or struct, or logged
// through log/slog's JSON and text handlers, shows its keys and never its
// secret (nor the secret's hex) but its TTL, while its JSON, the means of
// handing it over, still carries the secret.
func TestHandleNeverPrintsSecret(t *testing.T) {
	t.Parallel()
	secret, err := newSecret()
	if err != nil {
		t.Fatal(err)
	}
	h := Handle{Keys: []string{"orders", "stock"}, Secret: secret, Until: time.Now().Add(time.Minute), TTL: 1234 * time.Millisecond, Token: 7, Lease: "permit", Limit: 2, Quorum: 2}
	type job struct {
		Name   string
		Handle Handle
	}
	var printed = map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.200s", "%T"} {
		printed[verb] = fmt.Sprintf(verb, h)
		printed[verb+" of a pointer"] = fmt.Sprintf(verb, &h)
		printed[verb+" of a slice"] = fmt.Sprintf(verb, []Handle{h})
		printed[verb+" of a struct"] = fmt.Sprintf(verb, job{"nightly", h})
	}
	printed["Sprint"] = fmt.Sprint(h)
	printed["Sprintln"] = fmt.Sprintln(h, &h)
	printed["String"] = h.String()
	printed["GoString"] = h.GoString()
	var std bytes.Buffer
	log.New(&std, "", 0).Printf("resumed %v", h)
	printed["log.Printf"] = std.String()
	for name, handler := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog JSON": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(handler(&b)).Info("resumed", slog.Any("h", h), slog.Any("ptr", &h), "kv", h)
		printed[name] = b.String()
	}
	for what, out := range printed {
		if strings.Contains(out, secret) || strings.Contains(strings.ToLower(out), hex.EncodeToString([]byte(secret))) {
			t.Errorf("%s printed the secret", what)
		}
	}
	for _, what := range []string{"%v", "%+v", "%#v", "%s", "%v of a slice", "%+v of a struct", "Sprint", "log.Printf", "slog JSON", "slog text"} {
		if out := printed[what]; !strings.Contains(out, secret) && (!strings.Contains(out, "stock") || !strings.Contains(out, redacted)) {
			t.Errorf("%s printed %s; want the keys and %s", what, out, redacted)
		}
		// The TTL is no secret: it shows, as 1.234s or in nanoseconds.
		if out := printed[what]; !strings.Contains(out, "1.234s") && !strings.Contains(out, "1234000000") {
			t.Errorf("%s printed %s; want the TTL", what, out)
		}
	}
	var empty Handle
	if s := fmt.Sprint(empty); strings.Contains(s, redacted) {
		t.Errorf("Sprint(Handle{}) = %s; want no %s for a Handle without a secret", s, redacted)
	}
	if b, err := json.Marshal(h); err != nil || !bytes.Contains(b, []byte(secret)) {
		t.Errorf("json.Marshal(Handle) = %d bytes, %v; want the secret in them", len(b), err)
	}
}
