package rollup

import (
	"math/rand/v2"
	"testing"

	"hourglass/chunk"
)

// TestResumeEqualsCompute writes random runs in several parts, each
// part's buckets continued from the last bucket of the parts before it
// (Builder.Resume), and checks every bucket bit for bit against Compute
// over all the points, float sums included; a Resume that declines is
// counted and replaced by Compute over all the points so far.
func TestResumeEqualsCompute(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	resumed, declined := 0, 0
	for i := range 1500 {
		mode := i % 3
		pts := randomPoints(r, 7*hourMs, hourMs, 1+r.IntN(300), mode)
		if len(pts) == 0 {
			continue
		}
		iv := [...]int64{hourMs, 600_000, 60_000}[r.IntN(3)]
		var got []Bucket
		done := 0
		for done < len(pts) {
			k := done + 1 + r.IntN(len(pts)-done)
			part := pts[done:k]
			var b Builder
			switch {
			case done == 0:
				got, _ = Compute(nil, part, iv)
			case b.Resume(iv, got[len(got)-1], pts[done-1].T):
				resumed++
				got = got[:len(got)-1]
				for _, p := range part {
					var err error
					if got, err = b.Add(got, p.T, p.V); err != nil {
						t.Fatal(err)
					}
				}
				got = b.Flush(got)
			default:
				declined++
				got, _ = Compute(nil, pts[:k], iv)
			}
			done = k
		}
		want, _ := Compute(nil, pts, iv)
		if len(got) != len(want) {
			t.Fatalf("case %d: %d buckets, want %d", i, len(got), len(want))
		}
		for j := range want {
			if d := diff(&got[j], &want[j], 0); d != "" {
				t.Fatalf("case %d (mode %d, interval %d ms), bucket %d: %s", i, mode, iv, j, d)
			}
		}
	}
	if resumed == 0 || declined == 0 {
		t.Errorf("resumed %d, declined %d: want both", resumed, declined)
	}
	t.Logf("resumed %d, declined %d", resumed, declined)
}

// TestResumeDeclines covers the buckets Resume cannot continue.
func TestResumeDeclines(t *testing.T) {
	var b Builder
	big, _ := Compute(nil, []chunk.Point{{T: 1, V: chunk.Int(1 << 53)}, {T: 2, V: chunk.Int(1)}}, hourMs)
	if b.Resume(hourMs, big[0], 2) {
		t.Error("resumed an int sum whose float additions may round")
	}
	over, _ := Compute(nil, []chunk.Point{{T: 1, V: chunk.Int(1 << 62)}, {T: 2, V: chunk.Int(1 << 62)}}, hourMs)
	if !over[0].SumOverflow || b.Resume(hourMs, over[0], 2) {
		t.Error("resumed an overflowed int sum")
	}
	small, _ := Compute(nil, []chunk.Point{{T: 1, V: chunk.Int(5)}}, hourMs)
	if b.Resume(hourMs, small[0], hourMs) {
		t.Error("resumed with the previous point outside the bucket")
	}
	if !b.Resume(hourMs, small[0], 1) {
		t.Error("declined a small int bucket")
	}
}
