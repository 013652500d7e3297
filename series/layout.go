package series

import (
	"context"
	"encoding/json"
	"fmt"

	"hourglass/rowkey"
	"hourglass/store"
)

var (
	layoutRow       = []byte("layout")
	layoutQualifier = []byte("v1")
)

// RecordLayout stores want as the layout of the data set in st if the data
// set has none, and returns the layout in force (internal/app calls it at
// start; rowkey, a codec, knows nothing of the store). A data set created with another
// layout is refused with an error that names both values, because keys
// written under one layout cannot be read under another.
func RecordLayout(ctx context.Context, st store.Store, want rowkey.Layout) (rowkey.Layout, error) {
	if err := want.Validate(); err != nil {
		return rowkey.Layout{}, err
	}
	b, err := json.Marshal(want)
	if err != nil {
		return rowkey.Layout{}, err
	}
	written, existing, err := st.PutIfAbsent(ctx, store.TableMeta, layoutRow, layoutQualifier, b)
	if err != nil {
		return rowkey.Layout{}, fmt.Errorf("series: recording the layout: %w", err)
	}
	if written {
		return want, nil
	}
	var have rowkey.Layout
	if err := json.Unmarshal(existing, &have); err != nil {
		return rowkey.Layout{}, fmt.Errorf("series: the recorded layout %q is unreadable: %w", existing, err)
	}
	if err := have.Validate(); err != nil {
		return rowkey.Layout{}, fmt.Errorf("series: the recorded layout is invalid: %w", err)
	}
	for _, f := range []struct {
		name       string
		have, want int
	}{
		{"salt-buckets", have.SaltBuckets, want.SaltBuckets},
		{"uid-width-metric", have.MetricWidth, want.MetricWidth},
		{"uid-width-tagk", have.TagKWidth, want.TagKWidth},
		{"uid-width-tagv", have.TagVWidth, want.TagVWidth},
	} {
		if f.have != f.want {
			return rowkey.Layout{}, fmt.Errorf("series: the data set was created with %s=%d but this start asks for %s=%d; start with %s=%d (it cannot change once data is written)",
				f.name, f.have, f.name, f.want, f.name, f.have)
		}
	}
	return have, nil
}
