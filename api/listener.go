package api

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"
)

// splitListener accepts connections on one port and tells HTTP from the
// telnet-style line protocol by the first byte, as OpenTSDB does: an
// uppercase ASCII letter starts an HTTP request line (GET, POST, ...);
// anything else is the line protocol.
type splitListener struct {
	net.Listener
	conns  chan net.Conn
	telnet func(net.Conn, *bufio.Reader)
	once   sync.Once
	done   chan struct{}
	err    error
	wg     sync.WaitGroup
}

func newSplitListener(ln net.Listener, telnet func(net.Conn, *bufio.Reader)) *splitListener {
	s := &splitListener{Listener: ln, conns: make(chan net.Conn), telnet: telnet, done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *splitListener) loop() {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			// Set inside the once, before done closes, so Accept reads it
			// safely; after Close it stays nil (net.ErrClosed).
			s.once.Do(func() { s.err = err; close(s.done) })
			return
		}
		s.wg.Add(1)
		go s.classify(c)
	}
}

func (s *splitListener) classify(c net.Conn) {
	defer s.wg.Done()
	br := bufio.NewReaderSize(c, 64<<10)
	// A client that connects and says nothing for a long time is closed;
	// telnet clients send their first line at once.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Minute))
	b, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	if b[0] >= 'A' && b[0] <= 'Z' {
		select {
		case s.conns <- &peekedConn{Conn: c, r: br}:
		case <-s.done:
			c.Close()
		}
		return
	}
	s.telnet(c, br)
}

// Accept returns the next HTTP connection.
func (s *splitListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		if s.err != nil {
			return nil, s.err
		}
		return nil, net.ErrClosed
	}
}

func (s *splitListener) Close() error {
	err := s.Listener.Close()
	s.once.Do(func() { close(s.done) })
	return err
}

// peekedConn is a connection whose first bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
