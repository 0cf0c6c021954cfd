package health

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// CompareLeftOut checks that leaving quiet nodes out of an input changes
// nothing. It evaluates the input whole, with the quiet nodes left out
// back in Nodes (the reference), and as given, and says how the plans, but
// for the verdicts of the nodes left out (healthy, and nothing else), or
// the statuses built from them differ; nil when they do not. The
// simulation runs it on every sync.
func CompareLeftOut(in Input, quiet []*nodeview.Node) error {
	if len(quiet) == 0 {
		return nil
	}
	whole := in
	whole.Nodes = append(slices.Clip(in.Nodes), quiet...)
	whole.QuietNodes -= len(quiet)
	full, part := Evaluate(whole), Evaluate(in)
	left := make(map[string]bool, len(quiet))
	for _, node := range quiet {
		left[node.Name] = true
	}
	var kept []NodeVerdict
	for _, v := range full.Nodes {
		if !left[v.Node.Name] {
			kept = append(kept, v)
			continue
		}
		if !reflect.DeepEqual(v, NodeVerdict{Node: v.Node, State: StateHealthy}) {
			return fmt.Errorf("node %s was left out as quiet, but its verdict is %+v", v.Node.Name, v)
		}
	}
	fullStatus := Status(whole, &full, &Outcome{TimedOut: full.TimeOut, Deleted: full.Delete})
	partStatus := Status(in, &part, &Outcome{TimedOut: part.TimeOut, Deleted: part.Delete})
	full.Nodes, part.Nodes = kept, slices.Clip(part.Nodes)
	if len(full.Nodes) == 0 && len(part.Nodes) == 0 {
		full.Nodes, part.Nodes = nil, nil
	}
	if !reflect.DeepEqual(full, part) {
		return fmt.Errorf("with %d quiet nodes left out, the plans differ in %s", len(quiet), differentField(&full, &part))
	}
	if !reflect.DeepEqual(fullStatus, partStatus) {
		return fmt.Errorf("with %d quiet nodes left out, the statuses differ:\nwhole: %+v\nleft out: %+v", len(quiet), fullStatus, partStatus)
	}
	return nil
}

// differentField names the first exported field in which two plans
// differ, with both values.
func differentField(a, b *Plan) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		if !va.Type().Field(i).IsExported() {
			continue
		}
		if fa, fb := va.Field(i), vb.Field(i); !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			return fmt.Sprintf("%s:\nwhole: %+v\nleft out: %+v", va.Type().Field(i).Name, fa, fb)
		}
	}
	return "an unexported field"
}
