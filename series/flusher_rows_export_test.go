package series

import "reflect"

// FlusherRow returns what the flusher records of the series l's row of
// hour: the cells and points it counts, and the bytes the record holds, its
// own and whatever its slices, maps and pointers reach; ok is false when
// it keeps no record of that row. Call it while the flusher is idle (after
// Flush).
func (h *Head) FlusherRow(l Labels, hour int64) (cells, pts, bytes int, ok bool) {
	sh := h.shard(l)
	sh.mu.RLock()
	s := sh.m[l]
	sh.mu.RUnlock()
	if s == nil {
		return 0, 0, 0, false
	}
	ri := s.cachedRow(hour)
	if ri == nil {
		return 0, 0, 0, false
	}
	v := reflect.ValueOf(ri).Elem()
	return ri.own.cells, ri.own.pts, int(v.Type().Size()) + reached(v), true
}

// reached returns the bytes that v's slices, maps, strings and pointers
// hold beyond v itself.
func reached(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			n += reached(v.Field(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			n += reached(v.Index(i))
		}
	case reflect.Slice:
		n += v.Cap() * int(v.Type().Elem().Size())
		for i := range v.Len() {
			n += reached(v.Index(i))
		}
	case reflect.String:
		n += v.Len()
	case reflect.Pointer:
		if !v.IsNil() {
			n += int(v.Type().Elem().Size()) + reached(v.Elem())
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			n += int(it.Key().Type().Size()+it.Value().Type().Size()) + reached(it.Key()) + reached(it.Value())
		}
	}
	return n
}
