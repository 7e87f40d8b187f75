// Package scriptid names package dlm's Lua scripts by digest, so that the
// in-memory node of package memlock can run each one in Go without a Lua
// interpreter, and refuse any script it does not know rather than guess.
// Package dlm registers its scripts at initialization; nothing registers
// later, so lookups need no lock.
package scriptid

import (
	"fmt"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Names of the scripts an in-memory node runs.
const (
	Acquire              = "acquire"
	FencedAcquire        = "fenced-acquire"
	GuardedAcquire       = "guarded-acquire"
	GuardedFencedAcquire = "guarded-fenced-acquire"
	Release              = "release"
	Extend               = "extend"
	RaiseFence           = "raise-fence"
	Status               = "status"
	Leader               = "leader"
	ReadAcquire          = "read-acquire"
	GuardedReadAcquire   = "guarded-read-acquire"
	ReadExtend           = "read-extend"
	ReadRelease          = "read-release"
	PermitAcquire        = "permit-acquire"
	GuardedPermitAcquire = "guarded-permit-acquire"
	PermitExtend         = "permit-extend"
	PermitRelease        = "permit-release"
	ServerID             = "server-id"
)

// WakeSuffix names a lock key's wake channel (the key plus the suffix), on
// which grants ([WakeGrant]) and releases ([WakeRelease]) are announced.
const WakeSuffix = ":wake"

// Payloads announced on a wake channel by package dlm's scripts, and by the
// in-memory node that runs them in Go.
const (
	// WakeGrant announces a grant of the key.
	WakeGrant = "t"
	// WakeRelease, followed by the number of clients listening on the
	// channel in decimal, announces a release of the key.
	WakeRelease = "r"
)

// ReadersMark is the value of a lock key held by readers, and
// IntentSuffix names the key (the lock key plus the suffix) of a waiting
// writer's intent, which keeps new readers out (see dlm's scripts_rw.go).
const (
	ReadersMark  = "dlm:readers"
	IntentSuffix = ":wait"
)

var byHash = map[string]string{}

// Register names s. It panics on a name or digest registered twice.
func Register(name string, s *driver.Script) {
	if old, dup := byHash[s.Hash]; dup {
		panic(fmt.Sprintf("scriptid: %s and %s share digest %s", old, name, s.Hash))
	}
	for _, n := range byHash {
		if n == name {
			panic("scriptid: " + name + " registered twice")
		}
	}
	byHash[s.Hash] = name
}

// Name returns the name s was registered under, or "" for a script package
// dlm did not register.
func Name(s *driver.Script) string { return byHash[s.Hash] }
