package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// toolBuild is one command binary built for the test run.
type toolBuild struct {
	once sync.Once
	path string
	err  error
}

var (
	toolsMu sync.Mutex
	tools   = map[string]*toolBuild{}
)

// toolBinary builds hourglass/cmd/<name> once per test run and returns the
// binary's path.
func toolBinary(t *testing.T, name string) string {
	t.Helper()
	toolsMu.Lock()
	b := tools[name]
	if b == nil {
		b = &toolBuild{}
		tools[name] = b
	}
	toolsMu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "hourglass-e2e-"+name)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		out, err := exec.Command("go", "build", "-pgo=off", "-o", b.path, "hourglass/cmd/"+name).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
