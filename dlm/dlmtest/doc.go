// Package dlmtest tests node adapters and lock managers against real Redis.
//
// It has five parts, for the backends of this module and for anyone who
// writes an adapter of their own:
//
//   - A harness that runs redis-server processes for a test: [StartServer]
//     and [StartServers] start them as children of the test binary on free
//     127.0.0.1 ports, with no persistence and no configuration file, and
//     stop them in t.Cleanup. A [Server] can be killed and restarted empty on
//     its port, as after a crash, or paused with SIGSTOP, as a stalled
//     machine, for fault tests. [Server.Do] sends administrative commands.
//     The harness needs the redis-server binary ([RedisServerPath]); without
//     it, tests fail with the command that installs it rather than skip.
//   - [TestNode], a conformance suite in the spirit of testing/fstest: it
//     checks that a [driver.Node] keeps the contract the lock algorithm
//     relies on — reply normalization, the EVALSHA/EVAL fallback, error
//     replies, contexts honoured when the server stops answering, concurrent
//     use.
//   - [TestManager], the integration suite of a [dlm.Manager] on 1, 3 and 5
//     nodes through one adapter.
//   - [TestLocker], the suite of a [dlm.Locker]'s semantics, and
//     [TestShared], that of the read-write lock and the semaphore, which
//     managers on real Redis and package memlock's in-memory manager both
//     pass.
//   - [TestDriver] and [TestSecurity], the suites of a driver registered
//     with [dlm.Register], its nodes opened from URLs: passwords, ACL users,
//     databases, TLS, servers down, restarted or busy, contexts on a paused
//     server; and the least-privilege ACL rules, refusals and secrets kept
//     out of errors and logs.
//
// A typical adapter test:
//
//	func TestConformance(t *testing.T) {
//		s := dlmtest.StartServer(t)
//		dlmtest.TestNode(t, func(t *testing.T) driver.Node {
//			n, err := myadapter.Open("redis://" + s.Addr())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return n
//		})
//	}
//
// The harness talks to Redis through a small RESP client of its own, so
// importing dlmtest pulls no client library into a module.
package dlmtest
