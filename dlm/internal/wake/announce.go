package wake

// Announcers returns the mask of the nodes that should announce: the two
// of lowest index among those marked in among (nodes 0 to 63; all of them
// when none is marked). Every waiter listens on every node, so two nodes
// are enough to reach them, and one spare.
func Announcers(among uint64) uint64 {
	if among == 0 {
		among = ^uint64(0)
	}
	first := among & -among
	rest := among &^ first
	return first | rest&-rest
}
