package dlm

import "github.com/dlmgo/redlock/dlm/internal/script"

// announce appends announce's flag to req's arguments: f for the nodes in
// loud, f with Mode Quiet for the others (every node when f is Quiet). It
// is where a request's flag is set; [Manager.nodeArgs] makes Loud Sharded
// for a node that is a Redis Cluster. loud comes from [wake.Announcers].
func (r *request) announce(f script.Flag, loud uint64) {
	r.flag, r.loud = f, loud
	r.args = append(r.args, f.Arg())
	if f.Mode == script.Quiet {
		r.quiet = r.args
		return
	}
	q := f
	q.Mode = script.Quiet
	r.quiet = append(r.args[:len(r.args)-1:len(r.args)-1], q.Arg())
}
