package controller

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

// What a decision reads of a node is health.Node; nodecache fills it and
// nodeChanged says which of its changes wake a NodeHealthCheck. Every field
// a node keeps in the cache is either one nodeChanged compares or one that
// cannot change a decision: a field added to health.Node, or a metadata
// field nodecache starts to keep, fails here until nodeChanged says which.
func TestNodeChangedCoversWhatTheNodeCacheKeeps(t *testing.T) {
	compared := map[string]string{
		"Labels":       "selectors, the exclude label, the control-plane role",
		"Conditions":   "their types, statuses and transition times",
		"OutOfService": "its presence",
		"Annotations":  "the manual confirmation, the only one kept",
	}
	unchanging := map[string]string{
		"Name":              "the key: another name is another node",
		"UID":               "another UID is a node created again: a delete and an add",
		"ResourceVersion":   "every update has another",
		"CreationTimestamp": "set once, with the UID",
		"DeletionTimestamp": "no decision reads it: a node is remediated until it is gone",
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}}}}
	fill(reflect.ValueOf(&node.ObjectMeta).Elem())
	node.CreationTimestamp, node.DeletionTimestamp = t0, &t0
	node.Annotations = map[string]string{"note": "x", v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}
	kept := nodecache.NodeOf(node)

	var fields []string
	v := reflect.ValueOf(kept).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous {
			meta := v.Field(i)
			for j := range meta.NumField() {
				if !meta.Field(j).IsZero() {
					fields = append(fields, meta.Type().Field(j).Name)
				}
			}
			continue
		}
		fields = append(fields, f.Name)
	}
	for _, name := range fields {
		_, isCompared := compared[name]
		_, isUnchanging := unchanging[name]
		assert.True(t, isCompared || isUnchanging, "health.Node keeps %s: make nodeChanged compare it, or say here why its change cannot change a decision", name)
	}
	t.Logf("health.Node keeps %v", fields)
}

// fill gives every field of a struct a value other than its zero.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Ptr:
			f.Set(reflect.New(f.Type().Elem()))
			if f.Elem().Kind() == reflect.Struct {
				fill(f.Elem())
			}
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.Zero(f.Type().Elem()))
			f.Set(m)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Struct:
			fill(f)
		}
	}
}
