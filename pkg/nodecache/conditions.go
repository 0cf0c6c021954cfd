package nodecache

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// conditions sets the node's conditions from a NodeStatus: type, status and
// transition time, the previous node's slice where they all are equal.
func conditions(status []byte, node, previous *nodeview.Node) error {
	var prev []nodeview.Condition
	if previous != nil {
		prev = previous.Conditions
	}
	count, same := 0, prev != nil
	err := eachCondition(status, func(typ, stat []byte, transition time.Time) {
		same = same && count < len(prev) && string(typ) == string(prev[count].Type()) &&
			string(stat) == string(prev[count].Status()) && transition.Equal(prev[count].LastTransitionTime())
		count++
	})
	if err != nil || count == 0 {
		return err
	}
	if same && count == len(prev) {
		node.Conditions = prev
		return nil
	}
	node.Conditions = make([]nodeview.Condition, 0, count)
	return eachCondition(status, func(typ, stat []byte, transition time.Time) {
		node.Conditions = append(node.Conditions, nodeview.NewCondition(corev1.NodeConditionType(typ), corev1.ConditionStatus(stat), transition))
	})
}

// eachCondition calls f with every condition of a NodeStatus: its type and
// status as bytes, its transition time decoded.
func eachCondition(status []byte, f func(typ, stat []byte, transition time.Time)) error {
	r := reader{b: status}
	for r.next() {
		if r.num != statusConditions {
			continue
		}
		if r.typ != protowire.BytesType {
			return errNotCanonical
		}
		var typ, stat []byte
		var transition time.Time
		fields := reader{b: r.val}
		for fields.next() {
			switch fields.num {
			case conditionType, conditionStatus, conditionLastTransitionTime:
				if fields.typ != protowire.BytesType {
					return errNotCanonical
				}
			}
			switch fields.num {
			case conditionType:
				typ = fields.val
			case conditionStatus:
				stat = fields.val
			case conditionLastTransitionTime:
				t, err := timeOf(fields.val)
				if err != nil {
					return err
				}
				transition = t.Time
			}
		}
		if fields.err != nil {
			return fields.err
		}
		f(typ, stat, transition)
	}
	return r.err
}
