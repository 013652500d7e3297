package api

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"hourglass/api/auth"
	"hourglass/api/opentsdb"
	"hourglass/series"
)

// telnetBatch bounds the points of one WAL append from one connection.
const telnetBatch = 5000

// serveTelnet runs the line protocol on one connection: put lines are
// parsed as they come and appended in batches (everything the client has
// already sent, up to telnetBatch points), so a fast client shares WAL
// commits; other commands answer at once. Success is silent, errors are one
// line each, in OpenTSDB's words.
func (s *Server) serveTelnet(c net.Conn, br *bufio.Reader) {
	if !s.trackTelnet(c) {
		c.Close()
		return
	}
	defer s.untrackTelnet(c)
	defer c.Close()
	if s.auth != nil && s.auth.Enabled() && !s.cfg.Conn.TelnetAllowUnauthenticated {
		// The line protocol has no way to authenticate.
		s.auth.Fail(auth.ReasonTelnetRefused, c.RemoteAddr().String(), "telnet")
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte("error: authentication is on and the telnet protocol cannot authenticate: use HTTP /api/put, or start hourglass with -telnet.allow-unauthenticated\n"))
		return
	}
	lim := s.writer.Limits()
	parser := opentsdb.LineParser{Limits: opentsdb.Limits{MaxTags: lim.MaxTags, MaxNameLen: lim.MaxNameLen}}
	batch := s.writer.NewBatch()
	bw := bufio.NewWriter(c)
	var dp opentsdb.DataPoint
	var tags []series.Tag
	var line []byte
	commit := func() bool {
		if batch.Len() == 0 {
			return true
		}
		err := batch.Commit(context.Background())
		failed := batch.Failed()
		if err != nil {
			failed = batch.Len()
			_, _ = bw.WriteString("put: storage error: " + err.Error() + "\n")
		} else {
			for _, e := range batch.CommitErrors() {
				_, _ = bw.WriteString("put: illegal argument: " + e.Error() + "\n")
			}
		}
		s.m.points.WithLabelValues("opentsdb_telnet", "stored").Add(float64(batch.Len() - failed))
		s.m.points.WithLabelValues("opentsdb_telnet", "rejected").Add(float64(failed))
		batch.NewRequest() // each commit is a request for -max-new-series-per-request
		return err == nil
	}
	idle := s.cfg.Conn.TelnetIdleTimeout
	for n := 0; ; n++ {
		// Before waiting for the client (and every 1024 lines of a client
		// that keeps the buffer full), it gets TelnetIdleTimeout to speak.
		if br.Buffered() == 0 || n%1024 == 0 {
			// Shutdown's deadline may have come first: look again.
			_ = c.SetReadDeadline(time.Now().Add(idle))
			if s.isClosing() {
				commit()
				_ = bw.Flush()
				return
			}
		}
		var err error
		line, err = readLine(br, s.cfg.TelnetMaxLine, line)
		if err != nil {
			commit()
			if errors.Is(err, errLineTooLong) {
				_, _ = bw.WriteString("put: illegal argument: line longer than " + strconv.Itoa(s.cfg.TelnetMaxLine) + " bytes; discarded\n")
				if bw.Flush() != nil {
					return
				}
				continue
			}
			_ = bw.Flush()
			if isTimeout(err) && !s.isClosing() {
				s.cm.timeouts.WithLabelValues("telnet_idle").Inc()
			}
			return
		}
		cmd := opentsdb.Command(line)
		switch cmd {
		case "":
			// A blank line: nothing to do.
		case opentsdb.CmdPut:
			if perr := parser.Parse(line, &dp); perr != nil {
				batch.Reject(perr)
				_, _ = bw.WriteString(perr.Error() + "\n")
				break
			}
			// The parser remembers the series of the lines it has seen, and
			// beside each one, the Labels the batch gave it: a series sent
			// again is checked and looked up once, by the parser.
			var aerr error
			if l, ok := parser.Ref().(series.Labels); ok {
				aerr = batch.AddLabels(l, dp.Timestamp, dp.Value)
			} else {
				tags = toSeriesTags(tags, dp.Tags)
				if aerr = batch.Add(dp.Metric, tags, dp.Timestamp, dp.Value); aerr == nil {
					parser.SetRef(batch.LastLabels())
				}
			}
			if aerr != nil {
				_, _ = bw.WriteString("put: illegal argument: " + aerr.Error() + "\n")
			}
		case "exit":
			commit()
			_ = bw.Flush()
			return
		case "version":
			commit()
			_, _ = bw.WriteString("hourglass " + s.cfg.Version + "\nBuilt with " + goVersion() + "\n")
		case "help":
			_, _ = bw.WriteString(opentsdb.HelpReply("stats", "dropcaches", "version", "exit", "help", "put") + "\n")
		case "dropcaches":
			s.head.UIDs().DropCaches()
			_, _ = bw.WriteString("Caches dropped.\n")
		case "stats":
			commit()
			for _, st := range s.statsLines(time.Now()) {
				_, _ = bw.WriteString(st + "\n")
			}
		default:
			_, _ = bw.WriteString(opentsdb.UnknownCommand(cmd) + "\n")
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
