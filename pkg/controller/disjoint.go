package controller

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// disjoint tells, from the selectors alone, that no node can match both: a
// key that one requires and the other forbids, or values of a key that
// cannot be both. False means they may share nodes. Two NodeHealthChecks
// with disjoint selectors, such as upstream's workers (control-plane label
// DoesNotExist) and control plane (Exists), or pools by a label's value,
// never match each other's nodes, so a sync matches no node against them.
func disjoint(a, b labels.Selector) bool {
	ra, _ := a.Requirements()
	rb, _ := b.Requirements()
	for i := range ra {
		for j := range rb {
			if ra[i].Key() == rb[j].Key() && excludes(&ra[i], &rb[j]) {
				return true
			}
		}
	}
	return false
}

// excludes tells whether no value of one key, nor its absence, meets both
// requirements.
func excludes(x, y *labels.Requirement) bool {
	switch {
	case x.Operator() == selection.DoesNotExist:
		return requiresKey(y)
	case y.Operator() == selection.DoesNotExist:
		return requiresKey(x)
	}
	xIn, yIn := inValues(x), inValues(y)
	switch {
	case xIn != nil && yIn != nil:
		return !slices.ContainsFunc(xIn, func(v string) bool { return slices.Contains(yIn, v) })
	case xIn != nil && forbidsValues(y):
		return allIn(xIn, y.ValuesUnsorted())
	case yIn != nil && forbidsValues(x):
		return allIn(yIn, x.ValuesUnsorted())
	}
	return false
}

// requiresKey tells whether a requirement needs its key present.
func requiresKey(r *labels.Requirement) bool {
	switch r.Operator() {
	case selection.Exists, selection.In, selection.Equals, selection.DoubleEquals, selection.GreaterThan, selection.LessThan:
		return true
	}
	return false
}

// inValues returns the values a requirement allows, or nil when it allows
// any value.
func inValues(r *labels.Requirement) []string {
	switch r.Operator() {
	case selection.In, selection.Equals, selection.DoubleEquals:
		return r.ValuesUnsorted()
	}
	return nil
}

func forbidsValues(r *labels.Requirement) bool {
	return r.Operator() == selection.NotIn || r.Operator() == selection.NotEquals
}

func allIn(values, set []string) bool {
	for _, v := range values {
		if !slices.Contains(set, v) {
			return false
		}
	}
	return true
}
