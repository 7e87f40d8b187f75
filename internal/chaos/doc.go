// Package chaos is the chaos and safety suite of the lock manager: real
// redis-server processes behind fault-injecting proxies, many clients
// contending for a few keys through all three backends, faults applied while
// they run, and a checker that proves from the recorded history that no two
// clients ever believed they held the same lock at once.
//
// The pieces:
//
//   - [Proxy] and [Net]: an in-process TCP proxy on loopback with latency,
//     black hole, drop and heal, one per client and node, so a client can be
//     cut from any subset of the nodes ([Net.Partition]).
//   - [History] and [Check]: every grant and release with monotonic
//     timestamps, and an exact checker of overlapping validity windows and
//     of fencing tokens; [CheckLinearizable] checks the same history with
//     porcupine against a mutex model, as a cross-check.
//   - [CheckShared] and [SharedLocker]: the same for read-write locks and
//     semaphores — no writer's window overlaps another window of its key,
//     and no more than the limit of permits' windows are open at once
//     (TestChaosShared).
//   - [Locker]: the real [github.com/dlmgo/redlock/dlm.Manager] and
//     deliberately broken Redlocks ([ToyLocker]), read-write locks and
//     semaphores ([ToySharedLocker]) that prove the checkers can fail.
//   - [Workload] and [Injector]: the contention and the faults.
//   - TestSafetyMatrix: the safety matrix, every scenario in which a Redis
//     lock is known to fail (a holder process frozen past its validity, a
//     node's clock jump, a node restarted without its data, delayed
//     replies, a Sentinel failover, a holder frozen under auto-extension),
//     under each configuration that applies, against a resource that checks
//     tokens with [github.com/dlmgo/redlock/dlm.Fence]. `make safety` runs
//     200 trials per safe cell and writes docs/safety.md.
//   - TestSoak: the mutex, read-write locks, semaphores and elections under
//     every fault, every grant checked.
//
// It is a module of its own so that porcupine never enters the core's
// go.mod. `make test` runs the fast tests, two trials of each cell of the
// matrix and a seconds-long soak; `make chaos` runs a soak of five minutes
// (TestSoak with -chaos.soak), with the race detector; `make soak` runs it
// for 25 minutes and requires 100,000 checked grants.
package chaos
