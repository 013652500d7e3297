package pebble
import ("context";"testing";"math/rand/v2";"fmt"
	pebbledb "github.com/cockroachdb/pebble/v2"
	"hourglass/store")
func BenchmarkBlockSize(b *testing.B) {
	d := makeDataset(5, 100, 100, 4, 2)
	for _, bs := range []int{4<<10, 16<<10, 32<<10} {
		s, err := open(b.TempDir(), benchOptions(), func(po *pebbledb.Options){ for l := range po.Levels { po.Levels[l].BlockSize = bs } })
		if err != nil { b.Fatal(err) }
		load(b, s, d); s.Compact(context.Background())
		b.Run(fmt.Sprintf("readrow/%dK", bs>>10), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 5))
			for i := 0; i < b.N; i++ { s.ReadRow(context.Background(), store.TableData, d.rows[rng.IntN(len(d.rows))]) }
		})
		b.Run(fmt.Sprintf("scanrows/%dK", bs>>10), func(b *testing.B) {
			var ranges []store.KeyRange
			for i := 0; i < 1000; i++ { ranges = append(ranges, store.RowRange(d.rows[(i*16)%len(d.rows)])) }
			for i := 0; i < b.N; i++ { s.Scan(context.Background(), store.TableData, ranges, func(store.Cell) bool { return true }) }
		})
		b.Run(fmt.Sprintf("scan/%dK", bs>>10), func(b *testing.B) {
			for i := 0; i < b.N; i++ { s.Scan(context.Background(), store.TableData, []store.KeyRange{store.PrefixRange([]byte{byte(i%20)})}, func(store.Cell) bool { return true }) }
		})
		s.Close()
	}
}
