// Package e2e starts the real hourglass binary and talks to it over
// loopback as clients do.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binPath string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "hourglass-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "hourglass")
	args := []string{"build", "-pgo=off", "-o", binPath} // PGO (cmd/hourglass/default.pgo) changes speed, not behaviour: not worth a second compile of every package here
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "hourglass/cmd/hourglass")
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hourglass:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running hourglass process.
type server struct {
	t       *testing.T
	dataDir string
	args    []string
	cmd     *exec.Cmd
	addr    string
	url     string
	logs    *lockedBuffer
	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // its exit status, valid once exited is closed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs hourglass on a free loopback port with data in dataDir.
func start(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: dataDir, args: args}
	s.launch()
	t.Cleanup(func() { s.kill() })
	return s
}

func (s *server) launch() {
	s.t.Helper()
	args := append([]string{"-listen", "127.0.0.1:0", "-data-dir", s.dataDir, "-log-level", "warn"}, s.args...)
	s.cmd = exec.Command(binPath, args...)
	s.logs = &lockedBuffer{}
	s.cmd.Stderr = s.logs
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "hourglass listening on "); ok && !sent {
				addrc <- a
				sent = true
			}
		}
		if !sent {
			close(addrc)
		}
	}()
	go func(cmd *exec.Cmd, exited chan struct{}) {
		s.waitErr = cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
	select {
	case a, ok := <-addrc:
		if !ok {
			s.t.Fatalf("hourglass exited before listening:\n%s", s.logs.String())
		}
		s.addr = a
		s.url = "http://" + a
	case <-time.After(60 * time.Second):
		s.t.Fatalf("hourglass did not start listening within 60s:\n%s", s.logs.String())
	}
}

// kill sends SIGKILL and waits for the process to go.
func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited // closed whether or not stop saw the exit first
	s.cmd = nil
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if err := s.waitErr; err != nil {
			s.cmd = nil
			s.t.Fatalf("hourglass exited with %v after SIGTERM:\n%s", err, s.logs.String())
		}
	case <-time.After(60 * time.Second):
		s.t.Fatalf("hourglass did not exit within 60s of SIGTERM:\n%s", s.logs.String())
	}
	s.cmd = nil
}

// restart starts the process again on the same data directory.
func (s *server) restart() {
	s.t.Helper()
	s.launch()
}

var client = &http.Client{Timeout: 60 * time.Second}

// do sends a request and returns the status and body.
func (s *server) do(method, path, contentType string, body []byte) (int, []byte) {
	s.t.Helper()
	code, _, b, err := tryDo(method, s.url, path, contentType, body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, b
}

// tryDo sends a request to base+path and returns the status, headers and
// body; it is safe on any goroutine (it returns its error, fails nothing).
func tryDo(method, base, path, ctype string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func (s *server) postJSON(path string, v any) (int, []byte) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.do("POST", path, "application/json", b)
}
