package rowkey

import (
	"context"
	"encoding/json"
	"fmt"

	"hourglass/store"
)

var (
	layoutRow       = []byte("layout")
	layoutQualifier = []byte("v1")
)

// Record stores want as the layout of the data set in st if the data set has
// none, and returns the layout in force. A data set created with another
// layout is refused with an error that names both values, because keys
// written under one layout cannot be read under another.
func Record(ctx context.Context, st store.Store, want Layout) (Layout, error) {
	if err := want.Validate(); err != nil {
		return Layout{}, err
	}
	b, err := json.Marshal(want)
	if err != nil {
		return Layout{}, err
	}
	written, existing, err := st.PutIfAbsent(ctx, store.TableMeta, layoutRow, layoutQualifier, b)
	if err != nil {
		return Layout{}, fmt.Errorf("rowkey: recording the layout: %w", err)
	}
	if written {
		return want, nil
	}
	var have Layout
	if err := json.Unmarshal(existing, &have); err != nil {
		return Layout{}, fmt.Errorf("rowkey: the recorded layout %q is unreadable: %w", existing, err)
	}
	if err := have.Validate(); err != nil {
		return Layout{}, fmt.Errorf("rowkey: the recorded layout is invalid: %w", err)
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
			return Layout{}, fmt.Errorf("rowkey: the data set was created with %s=%d but this start asks for %s=%d; start with %s=%d (it cannot change once data is written)",
				f.name, f.have, f.name, f.want, f.name, f.have)
		}
	}
	return have, nil
}
