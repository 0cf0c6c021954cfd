package nodeview

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// addedLabel is the key of the label a change adds.
const addedLabel = "added"

// fullNode is a node with every field set, the ones Of keeps among them:
// labels, the kept annotations, two conditions, the out-of-service taint.
func fullNode() *corev1.Node {
	node := &corev1.Node{}
	fill(reflect.ValueOf(node).Elem())
	node.Labels = map[string]string{"kubernetes.io/hostname": node.Name, "role": "worker", v1alpha1.ExcludeFromRemediationLabel: "false"}
	node.Annotations = map[string]string{"note": "x", v1alpha1.ManuallyConfirmedHealthyAnnotation: "", metav1.InitialEventsAnnotationKey: "true"}
	node.Spec.Taints[0].Key = corev1.TaintNodeOutOfService
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: t0},
	}
	return node
}

// fill gives v, and every field in it, a value other than its zero.
func fill(v reflect.Value) {
	if v.Type() == reflect.TypeFor[metav1.Time]() {
		v.Set(reflect.ValueOf(t0))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	}
}

// fieldsOf returns the fields of a Node, its metadata as one.
func fieldsOf(node *Node) map[string]reflect.Value {
	v := reflect.ValueOf(node).Elem()
	fields := map[string]reflect.Value{}
	for i := range v.NumField() {
		fields[v.Type().Field(i).Name] = v.Field(i)
	}
	return fields
}

// changesOf returns, by the path of what it changes, every change of one
// thing a Node keeps: each field set, each entry of a map and each
// condition altered or removed, a label added, the conditions reordered.
func changesOf(node *Node) map[string]func(*Node) {
	changes := map[string]func(*Node){}
	var walk func(path string, at func(*Node) reflect.Value, v reflect.Value)
	walk = func(path string, at func(*Node) reflect.Value, v reflect.Value) {
		if v.IsZero() {
			return
		}
		switch v.Type() {
		case reflect.TypeFor[metav1.Time]():
			changes[path] = func(n *Node) { at(n).Set(reflect.ValueOf(metav1.NewTime(t0.Add(time.Second)))) }
			return
		case reflect.TypeFor[Labels]():
			labelChanges(node, changes)
			return
		case reflect.TypeFor[[]Condition]():
			conditionChanges(node, changes)
			return
		}
		switch v.Kind() {
		case reflect.String:
			changes[path] = func(n *Node) { at(n).SetString(at(n).String() + "x") }
		case reflect.Bool:
			changes[path] = func(n *Node) { at(n).SetBool(!at(n).Bool()) }
		case reflect.Int, reflect.Int32, reflect.Int64:
			changes[path] = func(n *Node) { at(n).SetInt(at(n).Int() + 1) }
		case reflect.Pointer:
			changes[path+" removed"] = func(n *Node) { at(n).SetZero() }
			walk(path, func(n *Node) reflect.Value { return at(n).Elem() }, v.Elem())
		case reflect.Map:
			for _, key := range slices.Sorted(maps.Keys(v.Interface().(map[string]string))) {
				k := reflect.ValueOf(key)
				changes[fmt.Sprintf("%s[%s]", path, key)] = func(n *Node) { at(n).SetMapIndex(k, reflect.ValueOf(v.MapIndex(k).String()+"x")) }
				changes[fmt.Sprintf("%s[%s] removed", path, key)] = func(n *Node) { at(n).SetMapIndex(k, reflect.Value{}) }
			}
		case reflect.Struct:
			for i := range v.NumField() {
				name := v.Type().Field(i).Name
				if !v.Type().Field(i).IsExported() {
					continue
				}
				inner := path + "." + name
				switch {
				case v.Type().Field(i).Anonymous:
					inner = path
				case path == "":
					inner = name
				}
				walk(inner, func(n *Node) reflect.Value { return at(n).Field(i) }, v.Field(i))
			}
		default:
			panic(fmt.Sprintf("%s: a %s; teach changesOf to change it", path, v.Type()))
		}
	}
	walk("", func(n *Node) reflect.Value { return reflect.ValueOf(n).Elem() }, reflect.ValueOf(node).Elem())
	return changes
}

// labelChanges adds a change of each label's value, each label removed,
// and a label added.
func labelChanges(node *Node, changes map[string]func(*Node)) {
	labels := map[string]string{}
	for _, p := range node.Labels.list.pairs {
		labels[p.key] = node.Labels.Get(p.key)
	}
	with := func(change func(map[string]string)) func(*Node) {
		return func(n *Node) {
			changed := maps.Clone(labels)
			change(changed)
			n.Labels = LabelsOf(n.Name, changed, nil)
		}
	}
	for key := range labels {
		changes["Labels["+key+"]"] = with(func(m map[string]string) { m[key] += "x" })
		changes["Labels["+key+"] removed"] = with(func(m map[string]string) { delete(m, key) })
	}
	changes["Labels["+addedLabel+"]"] = with(func(m map[string]string) { m[addedLabel] = "" })
}

// conditionChanges adds a change of each condition's type, status and
// transition time, each condition removed, and the conditions reordered.
func conditionChanges(node *Node, changes map[string]func(*Node)) {
	for i, c := range node.Conditions {
		set := func(c Condition) func(*Node) { return func(n *Node) { n.Conditions[i] = c } }
		path := fmt.Sprintf("Conditions[%d]", i)
		changes[path+".Type"] = set(NewCondition(c.Type()+"x", c.Status(), c.LastTransitionTime()))
		changes[path+".Status"] = set(NewCondition(c.Type(), c.Status()+"x", c.LastTransitionTime()))
		changes[path+".LastTransitionTime"] = set(NewCondition(c.Type(), c.Status(), c.LastTransitionTime().Add(time.Second)))
		changes[path+" removed"] = func(n *Node) { n.Conditions = slices.Delete(n.Conditions, i, i+1) }
	}
	changes["Conditions in another order"] = func(n *Node) { slices.Reverse(n.Conditions) }
}
