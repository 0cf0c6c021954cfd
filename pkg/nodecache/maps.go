package nodecache

import (
	"bytes"
	"unique"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// decodeKeptAnnotations decodes the annotations of an ObjectMeta that a node
// keeps (nodeview.IsKeptAnnotation). It returns previous when they equal it, so that
// an unchanged node shares its map with the cached one, and nil when none
// is kept, as nodeview.Of does.
func decodeKeptAnnotations(meta []byte, previous map[string]string) (map[string]string, error) {
	count, same, err := compareEntries(meta, previous)
	if err != nil || count == 0 {
		return nil, err
	}
	if same && count == len(previous) {
		return previous, nil
	}
	out := make(map[string]string, count)
	err = eachEntry(meta, metaAnnotations, true, func(key, value []byte) {
		out[intern(string(key))] = intern(string(value))
	})
	return out, err
}

// compareEntries counts the kept annotations and tells whether each is in
// previous with the same value and they come in strictly ascending key
// order, as the API server sorts them: with no key twice, as many entries
// as previous has are then previous.
func compareEntries(meta []byte, previous map[string]string) (count int, same bool, err error) {
	same = previous != nil
	var last []byte
	err = eachEntry(meta, metaAnnotations, true, func(key, value []byte) {
		count++
		if same {
			v, ok := previous[string(key)]
			same = ok && v == string(value) && (count == 1 || bytes.Compare(last, key) < 0)
			last = key
		}
	})
	return count, same, err
}

// eachEntry calls f with the key and value of every entry of the map field,
// in order, skipping keys that are not kept annotations when keptOnly.
func eachEntry(meta []byte, field protowire.Number, keptOnly bool, f func(key, value []byte)) error {
	r := reader{b: meta}
	for r.next() {
		if r.num != field {
			continue
		}
		if r.typ != protowire.BytesType {
			return errNotCanonical
		}
		key, value, err := entry(r.val)
		if err != nil {
			return err
		}
		if keptOnly && !nodeview.IsKeptAnnotation(key) {
			continue
		}
		f(key, value)
	}
	return r.err
}

// entry decodes a map entry; a missing key or value is empty.
func entry(data []byte) (key, value []byte, err error) {
	r := reader{b: data}
	for r.next() {
		switch r.num {
		case mapKey, mapValue:
			if r.typ != protowire.BytesType {
				return nil, nil, errNotCanonical
			}
			if r.num == mapKey {
				key = r.val
			} else {
				value = r.val
			}
		}
	}
	return key, value, r.err
}

// intern returns the canonical copy of s: equal strings share one backing
// array, which the garbage collector frees when no node uses it any more.
// Thousands of nodes share a few dozen label keys and values (role, zone,
// instance type, architecture) and condition types.
func intern(s string) string {
	return unique.Make(s).Value()
}
