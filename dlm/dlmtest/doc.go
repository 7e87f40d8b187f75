// Package dlmtest tests node adapters and lock managers against real Redis.
//
// It has four parts, for the backends of this module and for anyone who
// writes an adapter of their own. Their servers come from package
// [github.com/dlmgo/redlock/dlm/redistest], which starts redis-server processes for a test (servers,
// Redis Clusters, Sentinels, replicas, TLS, ACL files) and injects faults.
//
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
//		s := redistest.StartServer(t)
//		dlmtest.TestNode(t, func(t *testing.T) driver.Node {
//			n, err := myadapter.Open("redis://" + s.Addr())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return n
//		})
//	}
//
// The suites talk to Redis through a small RESP client of their own, so
// importing dlmtest pulls no client library into a module.
package dlmtest
