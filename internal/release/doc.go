// Command release checks that the repository's modules install as a new user
// installs them, before any tag is pushed.
//
// It builds a Go module proxy on disk from one commit of the repository
// (HEAD by default, with its uncommitted changes to tracked files): a zip
// made with golang.org/x/mod/zip from "git archive" of each published
// module, under the version that the modules' go.mod files require of one
// another. Then, with an empty module cache, GOPROXY pointing at that proxy
// first (and at the usual proxy for third-party modules only), no workspace,
// and GOFLAGS=-mod=mod, it runs what README.md tells a user to run:
//
//   - in a fresh module, the "go get" commands of the Installation section,
//     and "go get" of every module of its table;
//   - "go build" of the Usage section's Go snippet, taken from README.md so
//     that the check fails when the README drifts from the code;
//   - the commands of the "Using a checkout" section, in a fresh module with
//     the Usage snippet, $REDLOCK being the commit's tree unpacked: the
//     program builds, and go mod tidy leaves the backends it imports
//     required and drops one it does not;
//   - the "go install" command of the Command-line tool section, and
//     "go install .../cmd/redlock@VERSION", then "redlock version", which
//     must report VERSION.
//
// Usage, from the repository (make release-check):
//
//	cd internal/release && go run . [-repo ../..] [-ref HEAD] [-keep]
//
// The check needs no git tag: the version comes from the go.mod files, which
// must agree on one version for every published module (docs/releasing.md).
package main
