package adapterkit

import "errors"

// Read reports what a pub/sub connection receives until it fails: it calls
// receive, and deliver with what came, under p, until either returns an
// error or panics. It returns whether receive panicked: the connection's
// state is then unknown, and closing it may block for ever (a library may
// hold its lock on the way out), so the caller leaves it as it is; after any
// other end, the caller closes it.
func (p Panics) Read(receive func() (any, error), deliver func(any)) (receivePanicked bool) {
	for {
		v, err := p.Call(receive)
		if IsPanic(err) {
			return true
		}
		if err == nil {
			err = p.Do(func() { deliver(v) })
		}
		if err != nil {
			return false
		}
	}
}

// CloseSubscription closes a pub/sub connection with closeConn, under p, and
// waits for its reader to end (done). When closing panics, the connection
// may still be open: it returns the [driver.PanicError] at once. An error
// that matches closed, the library's own for a connection closed already
// (by the reader, after a failure), is not one.
func (p Panics) CloseSubscription(closeConn func() error, done <-chan struct{}, closed error) error {
	err := p.Close(closeConn)
	if IsPanic(err) {
		return err
	}
	<-done
	if errors.Is(err, closed) {
		return nil
	}
	return err
}
