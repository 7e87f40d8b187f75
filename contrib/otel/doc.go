// Package otel records what happens to the locks of a [dlm.Manager] as
// OpenTelemetry spans and metrics. Its [Hook] is a [dlm.Hook]:
//
//	hook, err := otel.NewHook() // the global providers, or WithTracerProvider and WithMeterProvider
//	if err != nil {
//		return err
//	}
//	m, err := dlm.Open(urls, dlm.WithHook(hook))
//
// Code that also imports go.opentelemetry.io/otel imports this package
// under another name, such as dlmotel. The tracer and the meter have the
// instrumentation scope [ScopeName].
//
// # Spans
//
// The manager reports an operation to its hook once the operation is over,
// with its start and duration. The hook then creates the operation's span
// with that start and ends it with that end, so the span shows when the
// operation really ran. Each span is a child of the span in the context
// given to the call (for an extension by auto-extension, the context given
// to the call that took the lock), and its kind is internal.
//
//	Span              Operation                              Attributes
//	dlm.lock          Lock, TryLock, LockAll, TryLockAll     key, outcome, attempts, fence; vote when not obtained
//	dlm.lock.attempt  one acquire attempt of those           key, outcome, vote, fence
//	dlm.extend        Lock.Extend, auto-extension included   key, outcome, vote, fence
//	dlm.unlock        Lock.Unlock, Do's included             key, outcome, vote, fence
//	dlm.do            Manager.Do, Manager.DoAll              key, outcome, fence
//
// The attempts of a lock are siblings of its dlm.lock span, not its
// children, and the spans of the lock, extensions and unlock inside a Do
// are siblings of its dlm.do span: a parent span must exist before its
// children, and the manager reports attempts before the call they belong
// to, which it does not identify.
//
// The attributes:
//
//	dlm.key          the lock's key; a multi-key lock's keys, sorted and joined by commas
//	dlm.outcome      obtained, extended, released, or ok for a Do, on success; otherwise
//	                 not_obtained (another holder has the lock), lost (ErrLockLost),
//	                 unavailable (too many nodes failed), canceled (the context ended),
//	                 closed (the manager was closed) or error
//	dlm.attempts     the acquire attempts the call made
//	dlm.vote.for     nodes that granted the request
//	dlm.vote.against nodes that refused it: another holder has the key, or the lock is gone
//	dlm.vote.failed  nodes that failed: an error reply, a timeout, a refused connection
//	dlm.fence        the fencing token, for a lock taken with dlm.WithFencing
//
// A vote stops counting once its outcome is certain, so its three counts
// may add up to fewer than the nodes; an unlock waits for every node.
//
// A failed operation's span has the status Error, described by the error's
// message. Each node that failed the operation's vote adds a span event
// named dlm.node_error, timed at the end of the vote, with the attributes
// dlm.node (the node's address, never its password), dlm.op (lock, extend
// or unlock) and dlm.error (the node's error, from which package dlm has
// removed the request's arguments, which a node may quote). No span carries
// the lock's secret token.
//
// # Metrics
//
//	Metric                Instrument  Unit         Attributes         Measures
//	dlm.acquire.duration  histogram   s            dlm.outcome        time Lock, TryLock, LockAll and TryLockAll took, waits included
//	dlm.grants            counter     {lock}                          locks obtained
//	dlm.contention        counter     {attempt}                       attempts not obtained because another holder had the lock
//	dlm.lost              counter     {lock}                          locks known lost before their release
//	dlm.extensions        counter     {extension}  dlm.outcome        extensions: extended, or why they failed
//	dlm.node.errors       counter     {error}      dlm.node, dlm.op   failed requests to one node
//	dlm.renewal.lag       histogram   s            dlm.outcome        how late each round of auto-extensions started
//	dlm.hold.duration     histogram   s            dlm.outcome        how long locks were held, to Unlock: released, or lost
//	dlm.waiting           gauge       {call}       (dlm.key)          calls of the process waiting for a lock now
//
// The wait for a lock is dlm.acquire.duration: from the call to its
// return, the attempts and the waits between them included.
// dlm.hold.duration runs from the return of the call that took a lock to
// its Unlock (Do unlocks when its function returns), outcome released, or
// lost when the lock was lost before. dlm.waiting is an up-down counter of
// the calls that wait ([dlm.EventWaiting] until their lock's event); with
// [WithWaitingKeys] it has the dlm.key attribute the option's function
// gives each key.
//
// The acquire histogram's buckets run from 1 ms to 30 s. The renewal lag
// is that of the most overdue extension of a round of the manager's
// auto-extensions ([dlm.EventRenewal], one per round, a few hundred a
// second at most): its buckets run from 1 ms to 5 s, and its dlm.outcome
// is on_time, or behind when the round started so late that locks are at
// risk ([dlm.ErrRenewalBehind]); give a manager whose renewals fall behind
// more CPU, or fewer locks. Metrics carry no key, as keys are often
// unbounded (one per order, per user), unless [WithWaitingKeys] bounds
// them; spans do.
//
// # Cost
//
// A manager without a hook builds no events. With this hook, each event
// costs a span when the tracer samples it, and a measurement; attributes
// are built only for spans being recorded. OnEvent runs on the goroutine
// of the lock operation, so the providers' processors and readers should
// export in the background, as the batching span processor and the
// periodic metric reader do.
package otel
