package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayoutChangeIsRefused starts on a data set created with 20 salt
// buckets asking for 16: the start must fail and say both values.
func TestLayoutChangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	s.put([]point{{metric: "layout.test", tags: map[string]string{"host": "a"}, ts: 1_700_000_000_000, value: int64(1)}})
	s.stop()
	out, err := exec.Command(binPath, "-listen", "127.0.0.1:0", "-data-dir", dir, "-salt-buckets", "16").CombinedOutput()
	if err == nil {
		t.Fatalf("hourglass started with -salt-buckets=16 on a 20-bucket data set:\n%s", out)
	}
	for _, want := range []string{"salt-buckets=20", "salt-buckets=16"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out)
		}
	}
	// The data set is untouched: the old settings still start and read it.
	s.restart()
	s.checkExact("layout.test", 1_700_000_000_000, 1_700_000_001_000,
		[]point{{metric: "layout.test", tags: map[string]string{"host": "a"}, ts: 1_700_000_000_000, value: int64(1)}})
}
