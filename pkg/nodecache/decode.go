package nodecache

import (
	"errors"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// errNotCanonical declines an input the fast path does not handle, such as
// a message field given twice; client-go's decoder and nodeview.Of take it.
var errNotCanonical = errors.New("not a canonical Node encoding")

// Field numbers of k8s.io/api/core/v1 and k8s.io/apimachinery's
// generated.proto, for the fields a nodeview.Node keeps.
const (
	nodeMetadata, nodeSpec, nodeStatus                                = 1, 2, 3
	metaName, metaUID, metaResourceVersion                            = 1, 5, 6
	metaCreationTimestamp, metaDeletionTimestamp                      = 8, 9
	metaLabels, metaAnnotations                                       = 11, 12
	specTaints                                                        = 5
	taintKey, taintValue, taintEffect, taintTimeAdded                 = 1, 2, 3, 4
	statusConditions                                                  = 4
	conditionType, conditionStatus, conditionLastTransitionTime       = 1, 2, 4
	mapKey, mapValue                                                  = 1, 2
	timestampSeconds                                                  = 1
	listMetadata, listItems                                           = 1, 2
	listMetaResourceVersion, listMetaContinue, listMetaRemainingItems = 2, 3, 4
)

// decoder decodes a protobuf Node into what nodeview.Of keeps of it,
// without the whole node: it reads the fields a nodeview.Node keeps and
// skips the rest. Labels, kept annotations and conditions equal to those of
// the node previous returns, the cached one, are shared with it, so that a
// heartbeat allocates little more than the node itself.
type decoder struct {
	// previous returns the cached node of that name, or nil.
	previous func(name string) *nodeview.Node
	// labelTable is the cache's own: its nodes with equal labels share one
	// list. Nil shares none.
	labelTable *nodeview.LabelTable
	// labelBuilders keep their buffers between nodes.
	labelBuilders sync.Pool
}

// node decodes a Node's protobuf bytes (the raw of its runtime.Unknown).
func (d *decoder) node(data []byte) (*nodeview.Node, error) {
	var meta, spec, status []byte
	var seen [nodeStatus + 1]bool
	r := reader{b: data}
	for r.next() {
		if r.num < nodeMetadata || r.num > nodeStatus {
			continue
		}
		if r.typ != protowire.BytesType || seen[r.num] {
			return nil, errNotCanonical
		}
		seen[r.num] = true
		switch r.num {
		case nodeMetadata:
			meta = r.val
		case nodeSpec:
			spec = r.val
		case nodeStatus:
			status = r.val
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	node := &nodeview.Node{}
	if err := d.metadata(meta, node); err != nil {
		return nil, err
	}
	var previous *nodeview.Node
	if d.previous != nil && node.Name != "" {
		previous = d.previous(node.Name)
	}
	if err := d.labels(meta, node, previous); err != nil {
		return nil, err
	}
	if err := outOfServiceTaint(spec, node); err != nil {
		return nil, err
	}
	if err := conditions(status, node, previous); err != nil {
		return nil, err
	}
	return node, nil
}

// metadata decodes the scalar fields of the ObjectMeta a nodeview.Node keeps.
func (d *decoder) metadata(data []byte, node *nodeview.Node) error {
	r := reader{b: data}
	for r.next() {
		switch r.num {
		case metaName, metaUID, metaResourceVersion, metaCreationTimestamp, metaDeletionTimestamp:
			if r.typ != protowire.BytesType {
				return errNotCanonical
			}
		}
		switch r.num {
		case metaName:
			node.Name = string(r.val)
		case metaUID:
			node.UID = types.UID(r.val)
		case metaResourceVersion:
			node.ResourceVersion = string(r.val)
		case metaCreationTimestamp:
			t, err := timeOf(r.val)
			if err != nil {
				return err
			}
			node.CreationTimestamp = t
		case metaDeletionTimestamp:
			t, err := timeOf(r.val)
			if err != nil {
				return err
			}
			node.DeletionTimestamp = &t
		}
	}
	return r.err
}

// labels sets the node's labels and kept annotations, the previous node's
// where equal.
func (d *decoder) labels(meta []byte, node, previous *nodeview.Node) error {
	var previousLabels nodeview.Labels
	var previousAnnotations map[string]string
	if previous != nil {
		previousLabels, previousAnnotations = previous.Labels, previous.Annotations
	}
	labels, err := d.nodeLabels(meta, node.Name, previousLabels)
	if err != nil {
		return err
	}
	annotations, err := decodeKeptAnnotations(meta, previousAnnotations)
	if err != nil {
		return err
	}
	node.Labels, node.Annotations = labels, annotations
	return nil
}

// nodeLabels decodes the labels of an ObjectMeta without a map, as the API
// server sends them by ascending key; out of that order, or with a key
// twice, they go through a map, as nodeview.Of takes them.
func (d *decoder) nodeLabels(meta []byte, name string, previous nodeview.Labels) (nodeview.Labels, error) {
	b, _ := d.labelBuilders.Get().(*nodeview.LabelBuilder)
	if b == nil {
		b = &nodeview.LabelBuilder{}
	}
	defer d.labelBuilders.Put(b)
	b.Reset(name)
	if err := eachEntry(meta, metaLabels, false, b.Add); err != nil {
		return nodeview.Labels{}, err
	}
	if labels, ok := b.Labels(previous, d.labelTable); ok {
		return labels, nil
	}
	labels := map[string]string{}
	err := eachEntry(meta, metaLabels, false, func(key, value []byte) { labels[string(key)] = string(value) })
	return nodeview.LabelsOf(name, labels, d.labelTable), err
}

// outOfServiceTaint keeps the first out-of-service taint of a NodeSpec.
func outOfServiceTaint(spec []byte, node *nodeview.Node) error {
	r := reader{b: spec}
	for r.next() {
		if r.num != specTaints {
			continue
		}
		if r.typ != protowire.BytesType {
			return errNotCanonical
		}
		taint, err := decodeTaint(r.val)
		if err != nil {
			return err
		}
		if taint.Key == corev1.TaintNodeOutOfService && node.OutOfService == nil {
			node.OutOfService = &taint
		}
	}
	return r.err
}

func decodeTaint(data []byte) (corev1.Taint, error) {
	var taint corev1.Taint
	r := reader{b: data}
	for r.next() {
		if r.num >= taintKey && r.num <= taintTimeAdded && r.typ != protowire.BytesType {
			return taint, errNotCanonical
		}
		switch r.num {
		case taintKey:
			taint.Key = string(r.val)
		case taintValue:
			taint.Value = string(r.val)
		case taintEffect:
			taint.Effect = corev1.TaintEffect(r.val)
		case taintTimeAdded:
			t, err := timeOf(r.val)
			if err != nil {
				return taint, err
			}
			taint.TimeAdded = &t
		}
	}
	return taint, r.err
}

// timeOf decodes a metav1.Time as metav1.Time.Unmarshal does: no bytes is
// the zero time, else the seconds in the local zone.
func timeOf(data []byte) (metav1.Time, error) {
	if len(data) == 0 {
		return metav1.Time{}, nil
	}
	var seconds int64
	r := reader{b: data}
	for r.next() {
		if r.num == timestampSeconds {
			if r.typ != protowire.VarintType {
				return metav1.Time{}, errNotCanonical
			}
			seconds = int64(r.v)
		}
	}
	return metav1.Time{Time: time.Unix(seconds, 0).Local()}, r.err
}

// reader steps through the fields of one protobuf message.
type reader struct {
	b   []byte
	err error
	// The current field: its number and type, and its bytes or varint.
	num protowire.Number
	typ protowire.Type
	val []byte
	v   uint64
}

// next reads the next field; false at the end or on an error, in err.
// Groups, which no Kubernetes type uses, are declined.
func (r *reader) next() bool {
	if len(r.b) == 0 || r.err != nil {
		return false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		r.err = errNotCanonical
		return false
	}
	r.b = r.b[n:]
	r.num, r.typ, r.val, r.v = num, typ, nil, 0
	switch typ {
	case protowire.BytesType:
		r.val, n = protowire.ConsumeBytes(r.b)
	case protowire.VarintType:
		r.v, n = protowire.ConsumeVarint(r.b)
	case protowire.Fixed32Type, protowire.Fixed64Type:
		n = protowire.ConsumeFieldValue(num, typ, r.b)
	default:
		n = -1
	}
	if n < 0 {
		r.err = errNotCanonical
		return false
	}
	r.b = r.b[n:]
	return true
}

// list decodes a NodeList's protobuf bytes.
func (d *decoder) list(data []byte) (*NodeList, error) {
	list := &NodeList{}
	r := reader{b: data}
	for r.next() {
		switch r.num {
		case listMetadata, listItems:
			if r.typ != protowire.BytesType {
				return nil, errNotCanonical
			}
		}
		switch r.num {
		case listMetadata:
			if err := listMeta(r.val, &list.ListMeta); err != nil {
				return nil, err
			}
		case listItems:
			node, err := d.node(r.val)
			if err != nil {
				return nil, err
			}
			list.Items = append(list.Items, *node)
		}
	}
	return list, r.err
}

// listMeta decodes the resourceVersion, continue token and remaining item
// count of a ListMeta, which a list's reader uses.
func listMeta(data []byte, meta *metav1.ListMeta) error {
	r := reader{b: data}
	for r.next() {
		switch r.num {
		case listMetaResourceVersion, listMetaContinue:
			if r.typ != protowire.BytesType {
				return errNotCanonical
			}
			if r.num == listMetaResourceVersion {
				meta.ResourceVersion = string(r.val)
			} else {
				meta.Continue = string(r.val)
			}
		case listMetaRemainingItems:
			if r.typ != protowire.VarintType {
				return errNotCanonical
			}
			remaining := int64(r.v)
			meta.RemainingItemCount = &remaining
		}
	}
	return r.err
}
