package otel

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestNodeErrorHidesScriptArgs runs locks on three nodes, one of which
// refuses scripting (EVALSHA and EVAL renamed away) and so answers with a
// quotation of the request's arguments, the lock's secret among them. The
// dlm.error attribute of each span's node failure, and the status of the
// span whose operation failed, keep the node's words but show neither a
// secret nor its start, nor the password.
//
// An attempt stops at a quorum of grants, which the two other nodes make
// without the refusing one: its failure is in the attempt's span only when
// it answered first, so the test locks until one attempt's span holds it.
// With a second node gone, the extension and the release need the refusing
// node's answer, and their spans always hold its failure.
func TestNodeErrorHidesScriptArgs(t *testing.T) {
	t.Parallel()
	withPassword := redistest.WithArgs("--requirepass", password)
	refusing := redistest.StartServer(t, withPassword, redistest.WithoutScripting())
	r := newRigOn(t, append([]*redistest.Server{refusing}, redistest.StartServers(t, 2, withPassword)...))
	ctx := context.Background()

	// failures returns the dlm.error of the refusing node's events in the
	// spans called name.
	failures := func(name string) []string {
		var msgs []string
		for _, s := range r.named(name) {
			for _, e := range s.Events() {
				if attrOf(e.Attributes, attrNode) == refusing.Addr() {
					msgs = append(msgs, attrOf(e.Attributes, attrError))
				}
			}
		}
		return msgs
	}
	var secrets []string
	var l *dlm.Lock
	for i := 0; len(failures(spanAttempt)) == 0; i++ {
		if i == maxAttemptsForFailure {
			t.Fatalf("%d locks and no attempt span holds the refusing node's failure; want one", i)
		}
		if l != nil {
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock with 2 of 3 nodes running scripts = %v", err)
			}
		}
		var err error
		if l, err = r.m.Lock(ctx, "k"+strconv.Itoa(i)); err != nil {
			t.Fatalf("Lock with 2 of 3 nodes running scripts = %v; want it obtained", err)
		}
		secrets = append(secrets, l.Handle().Secret, l.Handle().Secret[:6])
	}
	r.servers[2].Kill()
	if err := l.Extend(ctx, dlm.DefaultTTL); !errors.Is(err, dlm.ErrUnavailable) {
		t.Fatalf("Extend with 1 of 3 nodes running scripts = %v; want ErrUnavailable", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, dlm.ErrUnavailable) {
		t.Fatalf("Unlock with 1 of 3 nodes running scripts = %v; want ErrUnavailable", err)
	}

	for _, name := range []string{spanAttempt, spanExtend, spanUnlock} {
		msgs := failures(name)
		if len(msgs) == 0 {
			t.Errorf("span %s: no %s of %s; want the node's words", name, attrError, refusing.Addr())
		}
		for _, msg := range msgs {
			if !strings.Contains(strings.ToLower(msg), "unknown command 'evalsha', with args beginning with: [redacted]") {
				t.Errorf("span %s: %s of %s = %q; want the node's words, its quotation of the arguments removed", name, attrError, refusing.Addr(), msg)
			}
		}
	}
	unlocks := r.named(spanUnlock)
	if st := unlocks[len(unlocks)-1].Status(); st.Code != codes.Error || !strings.Contains(strings.ToLower(st.Description), "unknown command 'evalsha'") {
		t.Errorf("unlock span status = %+v; want the error, with the refusing node's", st)
	}
	r.wantNoSecret(t, append(secrets, password)...)
}

// maxAttemptsForFailure bounds the locks TestNodeErrorHidesScriptArgs takes
// until the refusing node answers an attempt before the quorum does: it
// answers at once, without running a script, so nearly always.
const maxAttemptsForFailure = 50

// attrOf returns the value of the attribute key among attrs, or "".
func attrOf(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value.AsString()
		}
	}
	return ""
}
