package opentsdbhttp

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"hourglass/api/opentsdb"
	"hourglass/ingest"
	"hourglass/model"
)

// telnetBatch bounds the points of one WAL append from one connection.
const telnetBatch = 5000

// ErrLineTooLong is a telnet line past TelnetMaxLine (TelnetConn.ReadLine).
var ErrLineTooLong = errors.New("line too long")

// TelnetConn is what ServeTelnet asks of the server about a connection.
type TelnetConn interface {
	// Closing reports whether the server is shutting down.
	Closing() bool
	// IdleLimit is how long the connection may say nothing before it is
	// closed (-telnet-idle-timeout).
	IdleLimit() time.Duration
	// IdleTimeout counts a connection closed for saying nothing.
	IdleTimeout()
	// ReadLine reads one line of at most max bytes, without its end of
	// line: in br's buffer when the line is there whole (valid until br is
	// read again), else gathered in *buf, which it grows. A longer line is
	// consumed and is ErrLineTooLong.
	ReadLine(br *bufio.Reader, max int, buf *[]byte) ([]byte, error)
	// IsTimeout reports whether a read error is a deadline passing.
	IsTimeout(err error) bool
	// Rejected counts and logs (rate-limited) one rejected line: kind is
	// one of the Reject constants, cmd the line's command, msg the reply.
	Rejected(kind, cmd, msg string)
	// SeriesCache adds to the counts of the connection's cache of series
	// (opentsdb.CacheStats) what it did since the last call.
	SeriesCache(d opentsdb.CacheStats)
	// MayAdmin reports whether the connection may run commands that need
	// the admin scope over HTTP (dropcaches): not when authentication is
	// on, since a telnet connection cannot authenticate.
	MayAdmin() bool
}

// Kinds of rejected telnet lines (TelnetConn.Rejected), the values of the
// label kind of hourglass_telnet_rejected_total: a fixed set, so an unknown
// command is never a label value.
const (
	RejectPut     = "put"      // a bad put line, or a point refused when added or committed
	RejectUnknown = "unknown"  // an unknown command
	RejectTooLong = "too_long" // a line past TelnetMaxLine
	RejectAuth    = "auth"     // a connection or an admin command refused: authentication is on
	RejectStorage = "storage"  // a batch the storage could not take
)

// ServeTelnet runs the line protocol on one connection (the server has
// tracked it and checked that it may speak): put lines are parsed as they
// come and appended in batches (everything the client has already sent, up
// to telnetBatch points), so a fast client shares WAL commits; other
// commands answer at once. Success is silent, errors are one line each, in
// OpenTSDB's words. closing reports the server's shutdown; idleTimeout is
// called when the client said nothing for IdleLimit; readLine reads
// one line of at most max bytes (ErrLineTooLong past it).
func (s *Handler) ServeTelnet(c net.Conn, br *bufio.Reader, t TelnetConn) {
	lim := s.writer.Limits()
	parser := opentsdb.LineParser{Limits: opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}}
	batch := s.writer.NewBatch()
	bw := bufio.NewWriter(c)
	var dp opentsdb.DataPoint
	var tags []model.Tag
	var line, lineBuf []byte
	var told opentsdb.CacheStats // what SeriesCache has been told
	commit := func() bool {
		if st := parser.CacheStats(); st != told {
			t.SeriesCache(opentsdb.CacheStats{Hits: st.Hits - told.Hits, Misses: st.Misses - told.Misses, Resets: st.Resets - told.Resets})
			told = st
		}
		if batch.Len() == 0 {
			return true
		}
		err := batch.Commit(context.Background())
		failed := batch.Failed()
		if err != nil {
			failed = batch.Len()
			msg := "put: storage error: " + err.Error()
			t.Rejected(RejectStorage, opentsdb.CmdPut, msg)
			_, _ = bw.WriteString(msg + "\n")
		} else {
			for _, e := range batch.CommitErrors() {
				msg := "put: illegal argument: " + e.Error()
				t.Rejected(RejectPut, opentsdb.CmdPut, msg)
				_, _ = bw.WriteString(msg + "\n")
			}
		}
		s.host.Points("opentsdb_telnet", "stored").Add(float64(batch.Len() - failed))
		s.host.Points("opentsdb_telnet", "rejected").Add(float64(failed))
		batch.NewRequest() // each commit is a request for -max-new-series-per-request
		return err == nil
	}
	idle := t.IdleLimit()
	for n := 0; ; n++ {
		// Before waiting for the client (and every 1024 lines of a client
		// that keeps the buffer full), it gets IdleLimit to speak.
		if br.Buffered() == 0 || n%1024 == 0 {
			// Shutdown's deadline may have come first: look again.
			_ = c.SetReadDeadline(time.Now().Add(idle))
			if t.Closing() {
				commit()
				_ = bw.Flush()
				return
			}
		}
		var err error
		line, err = t.ReadLine(br, s.cfg.TelnetMaxLine, &lineBuf) // valid until the next ReadLine
		if err != nil {
			commit()
			if errors.Is(err, ErrLineTooLong) {
				msg := "put: illegal argument: line longer than " + strconv.Itoa(s.cfg.TelnetMaxLine) + " bytes; discarded"
				t.Rejected(RejectTooLong, "", msg)
				_, _ = bw.WriteString(msg + "\n")
				if bw.Flush() != nil {
					return
				}
				continue
			}
			_ = bw.Flush()
			if t.IsTimeout(err) && !t.Closing() {
				t.IdleTimeout()
			}
			return
		}
		cmd := opentsdb.Command(line)
		switch cmd {
		case "":
			// A blank line: nothing to do.
		case opentsdb.CmdPut:
			ref, perr := parser.ParseKnown(line, &dp)
			if perr != nil {
				batch.Reject(perr)
				t.Rejected(RejectPut, cmd, perr.Error())
				_, _ = bw.WriteString(perr.Error() + "\n")
				break
			}
			// The parser remembers the series of the lines it has seen, and
			// beside each one, the Labels the batch gave it: a series sent
			// again is checked and looked up once, by the parser.
			var aerr error
			if k, ok := ref.(*ingest.Known); ok {
				aerr = batch.AddKnown(k, dp.Timestamp, dp.Value)
			} else {
				tags = toSeriesTags(tags, dp.Tags)
				if aerr = batch.Add(dp.Metric, tags, dp.Timestamp, dp.Value); aerr == nil {
					parser.SetRef(&ingest.Known{Labels: batch.LastLabels()})
				}
			}
			if aerr != nil {
				msg := "put: illegal argument: " + aerr.Error()
				t.Rejected(RejectPut, cmd, msg)
				_, _ = bw.WriteString(msg + "\n")
			}
		case opentsdb.CmdHistogram: // handler_histogram.go
			commit() // in order with the puts before it
			if msg := s.writes.telnetHistogram(context.Background(), line); msg != "" {
				t.Rejected(RejectPut, cmd, msg)
				_, _ = bw.WriteString(msg + "\n")
			}
		case opentsdb.CmdRollup:
			commit() // in order with the puts before it
			if msg := s.writes.telnetRollup(context.Background(), line); msg != "" {
				t.Rejected(RejectPut, cmd, msg)
				_, _ = bw.WriteString(msg + "\n")
			}
		case "exit":
			commit()
			_ = bw.Flush()
			return
		case "version":
			commit()
			_, _ = bw.WriteString("hourglass " + s.cfg.Version + "\nBuilt with " + goVersion() + "\n")
		case "help":
			_, _ = bw.WriteString(opentsdb.HelpReply("stats", "dropcaches", "version", "exit", "help", "put", "rollup", "histogram") + "\n")
		case "dropcaches":
			if !t.MayAdmin() {
				msg := "dropcaches: forbidden: authentication is on and a telnet connection cannot authenticate; it may write, not run admin commands (use HTTP /api/dropcaches with the admin scope)"
				t.Rejected(RejectAuth, cmd, msg)
				_, _ = bw.WriteString(msg + "\n")
				break
			}
			s.uids.DropCaches()
			_, _ = bw.WriteString("Caches dropped.\n")
		case "stats":
			commit()
			for _, st := range s.info.statsLines(time.Now()) {
				_, _ = bw.WriteString(st + "\n")
			}
		default:
			msg := opentsdb.UnknownCommand(cmd)
			t.Rejected(RejectUnknown, cmd, msg)
			_, _ = bw.WriteString(msg + "\n")
		}
		if batch.Len() >= telnetBatch || br.Buffered() == 0 {
			if !commit() {
				_ = bw.Flush()
				return
			}
			if bw.Flush() != nil {
				return
			}
		}
	}
}
