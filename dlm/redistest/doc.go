// Package redistest runs real redis-server processes for tests: the
// harness under package dlmtest's suites, for this module's backends and
// for anyone's adapter or application tests.
//
// [StartServer] and [StartServers] start servers as children of the test
// binary on free 127.0.0.1 ports, with no persistence and no configuration
// file, and stop them in t.Cleanup. A [Server] can be killed and restarted
// empty on its port, as after a crash, or paused with SIGSTOP, as a stalled
// machine, for fault tests; [Server.Do] sends administrative commands.
// [StartRedisCluster] makes a Redis Cluster of [ClusterMasters] masters,
// [StartReplica] a replica of a server and [StartSentinel] a Sentinel over
// a master. [WithArgs], [WithTLS] and [WithACLFile] configure the servers.
//
// The harness needs the redis-server binary ([RedisServerPath]); without it,
// tests fail with the command that installs it rather than skip. It talks
// to Redis through a small RESP client of its own, so importing it pulls no
// client library into a module.
//
//	func TestFailover(t *testing.T) {
//		s := redistest.StartServer(t, redistest.WithArgs("--requirepass", "pw"))
//		m, err := dlm.Open([]string{"redis+goredis://:pw@" + s.Addr()})
//		...
//		s.Restart() // the server comes back empty, as after a crash
//	}
package redistest
