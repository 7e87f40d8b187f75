package dlm

// Operation names, as they appear in errors and logs.
const (
	opLock   = "lock"
	opExtend = "extend"
	opUnlock = "unlock"
	opResume = "resume"
	// opLeader stores a new leader's value beside the election's lock.
	opLeader = "lead"
)
