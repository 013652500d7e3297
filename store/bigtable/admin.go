package bigtable

import (
	"context"
	"fmt"

	bt "cloud.google.com/go/bigtable"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"hourglass/store"
)

// gcOneVersion is the garbage-collection rule of the family: keep the
// newest version of each cell. Write leaves one version anyway; this
// clears the older version ReadModifyWrite leaves behind.
var gcOneVersion = bt.MaxVersionsPolicy(1)

// SplitKeys returns the keys that split a data table at the boundaries of
// saltBuckets salt buckets: 0x01, 0x02, ..., one tablet per bucket. It
// returns nil for one bucket.
func SplitKeys(saltBuckets int) []string {
	var keys []string
	for b := 1; b < saltBuckets && b < 256; b++ {
		keys = append(keys, string([]byte{byte(b)}))
	}
	return keys
}

// ensureTables creates the tables and the family that are missing. Without
// the permission to look (a node that may only read and write data), it
// assumes an operator created them and says so.
func (s *Store) ensureTables(ctx context.Context, saltBuckets int) error {
	for _, t := range store.Tables {
		if err := s.ensureTable(ctx, t, saltBuckets); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) ensureTable(ctx context.Context, t store.Table, saltBuckets int) error {
	name := s.names[t]
	opctx, cancel := s.opContext(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		info, err := s.admin.TableInfo(opctx, name)
		switch code := status.Code(err); {
		case err == nil:
			for _, f := range info.FamilyInfos {
				if f.Name == family {
					return nil
				}
			}
			for _, f := range info.Families {
				if f == family {
					return nil
				}
			}
			err = s.admin.CreateColumnFamilyWithConfig(opctx, name, family, bt.Family{GCPolicy: gcOneVersion})
			if err == nil || status.Code(err) == codes.AlreadyExists {
				s.log.Info("created the column family", "table", name, "family", family)
				return nil
			}
		case code == codes.NotFound:
			conf := &bt.TableConf{
				TableID:        name,
				ColumnFamilies: map[string]bt.Family{family: {GCPolicy: gcOneVersion}},
			}
			if t == store.TableData || t == store.TableRollup { // both keyed by salt first
				conf.SplitKeys = SplitKeys(saltBuckets)
			}
			err = s.admin.CreateTableFromConf(opctx, conf)
			if err == nil {
				s.log.Info("created the table", "table", name, "splits", len(conf.SplitKeys))
				return nil
			}
			if status.Code(err) == codes.AlreadyExists && opctx.Err() == nil {
				continue // another node created it: check its family
			}
		case code == codes.PermissionDenied:
			s.log.Warn("no permission to check or create the table; assuming it exists with family "+family, "table", name, "err", err)
			return nil
		}
		if !transient(err) || opctx.Err() != nil {
			return fail(ctx, opctx, "checking or creating the table "+name+", store", t, err)
		}
		if berr := backoff(opctx, attempt); berr != nil {
			return fail(ctx, opctx, "checking or creating the table "+name+", store", t, err)
		}
	}
}

// String describes the store for logs.
func (s *Store) String() string {
	return fmt.Sprintf("bigtable(%s)", s.names[store.TableData])
}
