// Package mixed holds the test that runs the manager integration suite over
// nodes reached through all three client libraries at once.
package mixed
