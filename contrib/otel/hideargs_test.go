package otel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestNodeErrorHidesScriptArgs runs a lock on three nodes, one of which
// refuses scripting (EVALSHA and EVAL renamed away) and so answers with a
// quotation of the request's arguments, the lock's secret among them. The
// dlm.error attribute of each span's node failure, and the status of the
// span whose operation failed, keep the node's words but show neither the
// secret nor its start, nor the password.
func TestNodeErrorHidesScriptArgs(t *testing.T) {
	t.Parallel()
	withPassword := redistest.WithArgs("--requirepass", password)
	refusing := redistest.StartServer(t, withPassword, redistest.WithoutScripting())
	r := newRigOn(t, append([]*redistest.Server{refusing}, redistest.StartServers(t, 2, withPassword)...))
	ctx := context.Background()

	l, err := r.m.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock with 2 of 3 nodes running scripts = %v; want it obtained", err)
	}
	secret := l.Handle().Secret
	if err := l.Extend(ctx, dlm.DefaultTTL); err != nil {
		t.Fatalf("Extend = %v", err)
	}
	// With a second node gone, Unlock fails, and its span's status quotes
	// the error.
	r.servers[2].Kill()
	if err := l.Unlock(ctx); !errors.Is(err, dlm.ErrUnavailable) {
		t.Fatalf("Unlock with 1 of 3 nodes running scripts = %v; want ErrUnavailable", err)
	}

	for _, name := range []string{spanAttempt, spanExtend, spanUnlock} {
		s := r.one(t, name)
		var msgs []string
		for _, e := range s.Events() {
			if attrOf(e.Attributes, attrNode) == refusing.Addr() {
				msgs = append(msgs, attrOf(e.Attributes, attrError))
			}
		}
		if len(msgs) != 1 || !strings.Contains(strings.ToLower(msgs[0]), "unknown command 'evalsha', with args beginning with: [redacted]") {
			t.Errorf("span %s: %s of %s = %q; want the node's words, its quotation of the arguments removed", name, attrError, refusing.Addr(), msgs)
		}
	}
	if st := r.one(t, spanUnlock).Status(); st.Code != codes.Error || !strings.Contains(strings.ToLower(st.Description), "unknown command 'evalsha'") {
		t.Errorf("unlock span status = %+v; want the error, with the refusing node's", st)
	}
	r.wantNoSecret(t, secret, secret[:6], password)
}

// attrOf returns the value of the attribute key among attrs, or "".
func attrOf(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value.AsString()
		}
	}
	return ""
}
