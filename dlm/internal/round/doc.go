// Package round is the quorum round of package dlm: one request sent to N
// nodes at once under one deadline, the votes counted, the quorum decided,
// and the release of what a failed round granted. Every primitive of dlm —
// locks, read locks, semaphores, elections, extensions and releases — runs
// its node requests through a [Round].
//
// The round knows nothing of a node's client, nor of what sits between it
// and the node: each node is a [Call], built once per manager, which
// package dlm decorates with the per-node variations (the run_id admission,
// SET NX GET in place of the acquire script, WAIT for replica
// acknowledgements, a Redis Cluster's sharded announcement, the redirect
// check). The round only sends, waits, counts and releases.
//
// Safety invariants, which every caller relies on:
//   - a grant counts only within its validity: [Vote.InTime] decides it,
//     from the moment the requests were sent;
//   - a grant that comes late, after the caller stopped waiting for it, is
//     released: [Round.Poll] hands the replies still due back as a
//     [Pending], and [Round.ReleaseAttempt] releases each node whose reply
//     granted or failed, also those that arrive after the caller gave up;
//   - a node is released only after its acquire request answered or
//     failed, so that a release cannot overtake the acquire on another
//     connection and leave the key behind for its TTL.
package round
