package driver

import (
	"context"
	"strings"
)

// transientCodes are the codes of the error replies by which a server says
// that it cannot serve now but will by itself: it is reading its data set
// (LOADING), running a script or function past its time limit (BUSY), a
// replica without its master (MASTERDOWN), a Cluster moving a slot
// (TRYAGAIN) or without a quorum or a master for every slot (CLUSTERDOWN).
var transientCodes = [...]string{"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"}

// maxClients starts the error reply a server sends to a new connection when
// it already has as many as its maxclients setting allows: it accepts
// connections again once others close.
const maxClients = "ERR max number of clients reached"

// Transient reports whether reply, the text of an error reply from Redis
// ("CODE message"), says that the server cannot serve now but will by
// itself, so that trying again later may succeed: LOADING, BUSY,
// MASTERDOWN, TRYAGAIN, CLUSTERDOWN, and "ERR max number of clients
// reached". Any other error reply turns the request, or the node's
// settings, down for good: a wrong password (WRONGPASS, NOAUTH), a user
// without the rights (NOPERM), a database the server lacks, a password the
// server does not want.
//
// It is the one rule by which the adapters' [Driver.Open] tells a server
// that refuses a node's settings, which fails Open, from one that is not
// ready yet, which Open treats as a server that cannot be reached; see
// [CheckOpen].
func Transient(reply string) bool {
	if strings.HasPrefix(reply, maxClients) {
		return true
	}
	code, _, _ := strings.Cut(reply, " ")
	for _, c := range transientCodes {
		if code == c {
			return true
		}
	}
	return false
}

// CheckOpen is the check of the server that every adapter's [Driver.Open]
// makes, within ctx, once its client is made, so that every backend opens
// the same nodes and refuses the same ones. do sends one command through
// the adapter's client and returns its error, nil for a reply that is not
// an error; errorReply returns the text of an error that is the server's
// error reply, and false for any other error (a connection that failed, a
// timeout, a panic in the client). CheckOpen sends:
//
//   - PING;
//   - AUTH PASSWORD when cfg has a password for the default user (a URL
//     with a password and no user, or the user "default"). A server that
//     has no password for its default user answers it with an error reply
//     ("ERR AUTH <password> called without any password configured for
//     the default user"), as Redis does to that command and as the redigo
//     client always saw, while a client that authenticates with HELLO would
//     be let in: a URL with a password for a server that wants none names
//     the wrong server, or one that lost its password (a restart that
//     dropped a CONFIG SET requirepass), and fails Open.
//
// CheckOpen returns the first error reply that is not [Transient], with
// cfg's password redacted. It returns nil when every command succeeds, and
// when a command fails otherwise or with a Transient reply: such a server
// is as good as unreachable for now, and a node opens while its server is
// down, so that a manager can be opened while a minority of its nodes is.
func CheckOpen(ctx context.Context, cfg *Config, do func(ctx context.Context, args ...string) error, errorReply func(error) (string, bool)) error {
	cmds := [][]string{{"PING"}}
	if cfg.Password != "" && (cfg.Username == "" || cfg.Username == "default") {
		cmds = append(cmds, []string{"AUTH", cfg.Password})
	}
	for _, cmd := range cmds {
		err := do(ctx, cmd...)
		if err == nil {
			continue
		}
		reply, ok := errorReply(err)
		if !ok || Transient(reply) {
			return nil
		}
		return RedactError(err, cfg.Password)
	}
	return nil
}
