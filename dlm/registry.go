package dlm

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

var (
	driversMu sync.RWMutex
	drivers   = make(map[string]driver.Driver)
)

// Register makes a node driver available under name, for URL schemes of the
// form "redis+NAME://" and "rediss+NAME://". Adapters call it from an init
// function, so that a blank import selects them. Register panics if d is nil
// or name is already registered, as database/sql does.
func Register(name string, d driver.Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d == nil {
		panic("dlm: Register driver is nil")
	}
	if name == "" || strings.ContainsAny(name, "+:/ ") {
		panic(fmt.Sprintf("dlm: Register driver name %q: want a plain word", name))
	}
	if _, dup := drivers[name]; dup {
		panic("dlm: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// Drivers returns the sorted names of the registered drivers.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for name := range drivers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// OpenNode opens one node from a URL whose scheme names the driver:
// "redis+goredis://user:pass@host:6379/0", "rediss+rueidis://host:6380" (TLS),
// "redis+redigo://host:6379?dial_timeout=50ms". A plain "redis://" or
// "rediss://" URL uses the only registered driver, and is refused with
// [ErrUnknownDriver], naming them, when several are registered: no driver
// is chosen for it. A URL is parsed before its driver is looked up, so a
// bad one, a URL without a host among them, is [driver.ErrBadURL] (and
// [ErrInvalid]) whatever drivers are registered. See [driver.ParseURL] for
// the URL parts every driver understands. A URL naming a database the
// server lacks (redis://h:6379/99 of a server with 16) fails too, with
// the server's reply wrapped in [driver.ErrBadURL]. Errors never contain the
// password.
func OpenNode(url string) (driver.Node, error) {
	if err := checkNotBareAddr(url); err != nil {
		return nil, err
	}
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	d, err := lookupDriver(cfg.Driver)
	if err != nil {
		return nil, fmt.Errorf("dlm: open %s: %w", driver.RedactOrigin(url), err)
	}
	n, err := d.Open(url)
	if err != nil {
		// As a NodeError, a refused login matches ErrPermission.
		nerr := &NodeError{Node: cfg.Name(), Err: driver.RedactError(err, cfg.Password)}
		if missingDatabase(err) {
			// The URL names a database the server lacks: the URL is
			// wrong for this server, as a bad port would be.
			return nil, fmt.Errorf("dlm: open %s: %w: the server has no database %d: %w", driver.RedactOrigin(url), driver.ErrBadURL, cfg.DB, nerr)
		}
		return nil, fmt.Errorf("dlm: open %s: %w", driver.RedactOrigin(url), nerr)
	}
	return n, nil
}

// missingDatabase reports whether err, a driver's failure to open a node,
// is the server's refusal of the URL's database: Redis answers SELECT of
// a database past its databases setting so. Drivers quote the reply,
// some without its code ERR.
func missingDatabase(err error) bool {
	return strings.Contains(err.Error(), "DB index is out of range")
}

func lookupDriver(name string) (driver.Driver, error) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	if name != "" {
		d, ok := drivers[name]
		if !ok {
			return nil, fmt.Errorf("%w %q (forgotten import?); registered: %s", ErrUnknownDriver, name, registeredList())
		}
		return d, nil
	}
	switch len(drivers) {
	case 0:
		return nil, fmt.Errorf("%w: no driver is registered (forgotten import of a backend such as github.com/dlmgo/redlock/backends/goredis?)", ErrUnknownDriver)
	case 1:
		for _, d := range drivers {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w: several drivers are registered (%s); name one in the scheme, as in redis+%s://", ErrUnknownDriver, registeredList(), firstName())
}

// registeredList and firstName are called with driversMu held.
func registeredList() string {
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func firstName() string {
	name, _, _ := strings.Cut(registeredList(), ",")
	return name
}
