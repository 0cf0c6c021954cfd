package health

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxForecastPlans bounds the plans one forecast makes.
const maxForecastPlans = 1000

// Forecast is what would happen to one unhealthy or soon unhealthy node if
// nothing but time changed.
type Forecast struct {
	Node string
	// At is when its first remediation would be created; zero when not
	// before the forecast's end.
	At time.Time
	// Waiting is why it would wait when it is due, and Because says it in
	// words; empty when it would not wait.
	Waiting WaitReason
	Because string
}

// ForecastFirstRemediations evaluates in at in.Now and at every later
// instant at which the plan can change, up to until, as the controller
// would: every planned create and deletion succeeds and the status is
// written, while the nodes stay as they are. It returns a forecast for each
// node that needs a first remediation by then, by name.
func ForecastFirstRemediations(in Input, until time.Time) map[string]Forecast {
	forecasts := map[string]Forecast{}
	in.NHC = in.NHC.DeepCopy()
	resources := make(map[string][]Remediation, len(in.Remediations))
	for node, list := range in.Remediations {
		resources[node] = slices.Clone(list)
	}
	in.Remediations, in.MaxCreations = resources, 0
	for i := 0; i < maxForecastPlans; i++ {
		plan := Evaluate(in)
		out := Outcome{TimedOut: plan.TimeOut, Deleted: plan.Delete}
		for _, c := range plan.Create {
			ref := corev1.ObjectReference{
				APIVersion: c.Template.APIVersion, Kind: RemediationKind(c.Template.Kind), Namespace: c.Template.Namespace,
				Name: c.Node, UID: types.UID(fmt.Sprintf("forecast-%d-%s", i, c.Node)),
			}
			out.Created = append(out.Created, Created{Creation: c, Resource: ref, CreationTime: in.Now})
			resources[c.Node] = append(resources[c.Node], Remediation{Ref: ref, TemplateName: c.Template.Name, Created: in.Now})
			if f := forecasts[c.Node]; f.At.IsZero() {
				forecasts[c.Node] = Forecast{Node: c.Node, At: in.Now, Waiting: f.Waiting, Because: f.Because}
			}
		}
		for j := range plan.Nodes {
			v := &plan.Nodes[j]
			if _, seen := forecasts[v.Node.Name]; !seen && v.State == StateUnhealthy && v.Remediations == 0 && v.Waiting != WaitNone {
				forecasts[v.Node.Name] = Forecast{Node: v.Node.Name, Waiting: v.Waiting, Because: plan.becauseOf(v)}
			}
		}
		for _, del := range out.Deleted {
			resources[del.Node] = slices.DeleteFunc(resources[del.Node], func(r Remediation) bool { return r.Ref.UID == del.Resource.UID })
		}
		maps.DeleteFunc(resources, func(_ string, list []Remediation) bool { return len(list) == 0 })
		in.NHC.Status = Status(in, &plan, &out)
		if plan.NextDeadline.IsZero() || plan.NextDeadline.After(until) {
			break
		}
		in.Now = plan.NextDeadline
	}
	return forecasts
}
