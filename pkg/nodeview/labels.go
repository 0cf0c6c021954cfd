package nodeview

import (
	"encoding/binary"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unique"
	"weak"
)

// Labels are a node's labels as the controller keeps them. Nodes with the
// same labels built through one LabelTable share one immutable list, and a
// value equal to the node's own name, as the hostname label has, is kept
// as a reference to that name: so the thousand nodes of a pool share one
// list, where each had a map of a kilobyte. Labels implements labels.Labels
// for selectors; the zero value has none. Build them with LabelsOf or a
// LabelBuilder.
type Labels struct {
	// nodeLabels is one pointer, so that a Labels passed as labels.Labels to a
	// selector allocates nothing; nil without labels.
	*nodeLabels
}

// nodeLabels are one node's: its list and its name.
type nodeLabels struct {
	// list is shared by every node with these labels.
	list *labelList
	// name is the node's name, the value of the pairs that refer to it.
	name string
}

// labelList is one set of labels, by ascending key.
type labelList struct {
	pairs []labelPair
	// encoded is the canonical encoding the table finds the list by, and
	// equal labels are equal by.
	encoded string
	// refersToName tells whether a value is the node's name.
	refersToName bool
}

type labelPair struct {
	key, value string
	// isName tells that the value is the node's name, not value.
	isName bool
}

// Lookup returns the value of the label and whether the node has it.
func (l Labels) Lookup(key string) (string, bool) {
	if l.nodeLabels == nil {
		return "", false
	}
	i, found := slices.BinarySearchFunc(l.list.pairs, key, func(p labelPair, key string) int {
		return strings.Compare(p.key, key)
	})
	if !found {
		return "", false
	}
	if l.list.pairs[i].isName {
		return l.name, true
	}
	return l.list.pairs[i].value, true
}

// Get returns the value of the label, empty when the node has none.
func (l Labels) Get(key string) string {
	value, _ := l.Lookup(key)
	return value
}

// Has tells whether the node has the label, whatever its value.
func (l Labels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// Equal tells whether two nodes' labels are equal. Equal lists of one table
// are one list, so it compares no pair; those of two tables compare their
// encodings.
func (l Labels) Equal(other Labels) bool {
	if l.nodeLabels == other.nodeLabels {
		return true
	}
	if l.nodeLabels == nil || other.nodeLabels == nil {
		return false
	}
	return (l.list == other.list || l.list.encoded == other.list.encoded) && (!l.list.refersToName || l.name == other.name)
}

// DeepCopyInto copies the labels; they are immutable and stay shared.
func (l *Labels) DeepCopyInto(out *Labels) {
	*out = *l
}

// LabelsOf returns the labels of the node of that name, shared through
// table (nil: with no other node).
func LabelsOf(name string, labels map[string]string, table *LabelTable) Labels {
	var b LabelBuilder
	b.Reset(name)
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		b.Add([]byte(key), []byte(labels[key]))
	}
	labelsOf, _ := b.Labels(Labels{}, table)
	return labelsOf
}

// LabelBuilder builds a node's Labels from its pairs by ascending key, as
// the API server sends them, without a map. Its buffer is kept between
// nodes, so that a node whose labels did not change costs no allocation.
type LabelBuilder struct {
	encoded []byte
	name    string
	lastKey []byte
	// unordered is set when a key did not come after the one before.
	unordered bool
}

// Reset starts the labels of the node of that name.
func (b *LabelBuilder) Reset(name string) {
	b.encoded, b.name, b.lastKey, b.unordered = b.encoded[:0], name, b.lastKey[:0], false
}

// Add adds a pair; its key must come after the one added before.
func (b *LabelBuilder) Add(key, value []byte) {
	if len(b.encoded) > 0 && string(key) <= string(b.lastKey) {
		b.unordered = true
	}
	b.lastKey = append(b.lastKey[:0], key...)
	b.encoded = binary.AppendUvarint(b.encoded, uint64(len(key)))
	b.encoded = append(b.encoded, key...)
	if string(value) == b.name && len(value) > 0 {
		b.encoded = binary.AppendUvarint(b.encoded, nameLength)
		return
	}
	b.encoded = binary.AppendUvarint(b.encoded, uint64(len(value)))
	b.encoded = append(b.encoded, value...)
}

// Labels returns the labels added, shared through table (nil: with no
// other node), previous itself when they equal it, and false when the keys
// were not in ascending order.
func (b *LabelBuilder) Labels(previous Labels, table *LabelTable) (Labels, bool) {
	if b.unordered {
		return Labels{}, false
	}
	if len(b.encoded) == 0 {
		return Labels{}, true
	}
	if previous.nodeLabels != nil && previous.name == b.name && previous.list.encoded == string(b.encoded) {
		return previous, true
	}
	return Labels{&nodeLabels{list: table.intern(b.encoded), name: b.name}}, true
}

// nameLength marks a pair whose value is the node's name: the largest
// uvarint, longer than any value can be.
const nameLength = ^uint64(0)

// LabelTable finds the list of an encoding while a node holds it, so that
// the nodes it builds with equal labels share one. It holds its lists
// weakly: a list no node holds any more is dropped. The node cache owns
// one; a nil table shares nothing.
type LabelTable struct {
	mu    sync.Mutex
	lists map[string]weak.Pointer[labelList]
}

// NewLabelTable returns an empty table.
func NewLabelTable() *LabelTable {
	return &LabelTable{lists: map[string]weak.Pointer[labelList]{}}
}

// intern returns the list of an encoding, the one already held when any.
func (t *LabelTable) intern(encoded []byte) *labelList {
	if t == nil {
		return decodeLabelList(encoded)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if list := t.lists[string(encoded)].Value(); list != nil {
		return list
	}
	list := decodeLabelList(encoded)
	t.lists[list.encoded] = weak.Make(list)
	runtime.AddCleanup(list, t.drop, list.encoded)
	return list
}

// drop forgets an encoding whose list was collected, unless it was
// interned again since.
func (t *LabelTable) drop(encoded string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lists[encoded].Value() == nil {
		delete(t.lists, encoded)
	}
}

// decodeLabelList reads a LabelBuilder's encoding, interning keys and
// values as the rest of the node cache does.
func decodeLabelList(encoded []byte) *labelList {
	list := &labelList{encoded: string(encoded)}
	for rest := encoded; len(rest) > 0; {
		var pair labelPair
		var key []byte
		key, rest = nextBytes(rest)
		pair.key = unique.Make(string(key)).Value()
		if n, size := binary.Uvarint(rest); n == nameLength {
			pair.isName, rest = true, rest[size:]
			list.refersToName = true
		} else {
			var value []byte
			value, rest = nextBytes(rest)
			pair.value = unique.Make(string(value)).Value()
		}
		list.pairs = append(list.pairs, pair)
	}
	return list
}

// nextBytes reads a length-prefixed field of an encoding the builder wrote,
// and returns the rest.
func nextBytes(encoded []byte) (field, rest []byte) {
	n, size := binary.Uvarint(encoded)
	end := size + int(n)
	return encoded[size:end], encoded[end:]
}
