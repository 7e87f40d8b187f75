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

// Reader is the life of a subscription whose connection a goroutine of its
// own reads: the reader receives and delivers until the connection fails,
// then closes it; Close closes the connection and waits for the reader.
type Reader struct {
	panics    Panics
	closeConn func() error
	closed    error
	done      chan struct{}
}

// StartReader starts the reader of a pub/sub connection: it calls receive,
// and deliver with what came, under p, until either fails or panics (see
// [Panics.Read]), and then closes the connection with closeConn, unless
// receive panicked. closed is the library's error for a connection closed
// already, as [Panics.CloseSubscription] takes it.
func (p Panics) StartReader(receive func() (any, error), deliver func(any), closeConn func() error, closed error) *Reader {
	r := &Reader{panics: p, closeConn: closeConn, closed: closed, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if !p.Read(receive, deliver) {
			p.Close(closeConn)
		}
	}()
	return r
}

// Done is closed when the reader has ended.
func (r *Reader) Done() <-chan struct{} { return r.done }

// Close closes the connection and waits for the reader to end, as
// [Panics.CloseSubscription] does.
func (r *Reader) Close() error { return r.panics.CloseSubscription(r.closeConn, r.done, r.closed) }
