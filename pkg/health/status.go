package health

import (
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Status builds the status from the input, the plan and the outcome of
// carrying the plan out. It is the only place that sets status fields, so the
// status records only what the cluster shows: a resource appears once it was
// created and leaves once the informers show it deleted, a step is timed out
// once its annotation was written.
func Status(in Input, p *Plan, out *Outcome) v1alpha1.NodeHealthCheckStatus {
	b := &statusBuilder{in: in, p: p, out: out, verdicts: map[string]*NodeVerdict{}}
	if in.ResourcesUnknown {
		// Nothing is known but the problem: the remediations stay on record.
		status := *in.NHC.Status.DeepCopy()
		if p.Problem != nil {
			status.ObservedGeneration = in.NHC.Generation
			b.setDisabled(&status)
			b.setPhase(&status)
			stampUpdate(&status, &in.NHC.Status, in.Now)
		}
		return status
	}
	previous := &in.NHC.Status
	entries := b.entries()
	status := v1alpha1.NodeHealthCheckStatus{
		ObservedNodes:    ptr.To(int32(p.Observed)),
		HealthyNodes:     ptr.To(int32(p.Healthy)),
		RemediatingNodes: ptr.To(int32(p.Remediating + newlyRemediating(out))),
		// The history sees every entry, before the bounds leave some out.
		RemediationHistory: b.history(entries),
		Conditions:         slices.Clone(previous.Conditions),
		ObservedGeneration: in.NHC.Generation,
	}
	var compacted bool
	status.UnhealthyNodes, b.unlisted, compacted = bound(b.p.rules.steps, entries, in.statusBytes(), in.Remediations)
	for _, entry := range status.UnhealthyNodes {
		if len(entry.Remediations) > 0 && !compacted {
			if status.InFlightRemediations == nil {
				status.InFlightRemediations = map[string]metav1.Time{}
			}
			// The deprecated inFlightRemediations, kept for old readers.
			status.InFlightRemediations[entry.Name] = entry.Remediations[0].Started
		}
	}
	b.setDisabled(&status)
	b.setStorm(&status)
	b.setOverlap(&status)
	b.setPhase(&status)
	stampUpdate(&status, previous, in.Now)
	return status
}

// stampUpdate sets lastUpdateTime to now when anything else changed, so that
// an unchanged status needs no write.
func stampUpdate(status, previous *v1alpha1.NodeHealthCheckStatus, now time.Time) {
	status.LastUpdateTime = previous.LastUpdateTime.DeepCopy()
	if !apiequality.Semantic.DeepEqual(status, previous) {
		status.LastUpdateTime = ptr.To(metav1.NewTime(now))
	}
}

type statusBuilder struct {
	in  Input
	p   *Plan
	out *Outcome
	// unlisted counts the nodes the bounds left out of unhealthyNodes.
	unlisted int
	// verdicts are the verdicts of the listed nodes, by name.
	verdicts map[string]*NodeVerdict
}

// newlyRemediating counts the nodes whose first resource was created.
func newlyRemediating(out *Outcome) int {
	n := 0
	for i := range out.Created {
		if out.Created[i].FirstResource {
			n++
		}
	}
	return n
}

// entries lists the nodes the plan lists and the orphans, by name, each with
// its resources, the created ones included, before the bounds apply; a node
// with a write not yet seen keeps its last entry. It keeps the listed
// verdicts for the history.
func (b *statusBuilder) entries() []*v1alpha1.UnhealthyNode {
	l := newEntryList(b)
	for i := range b.p.Nodes {
		if v := &b.p.Nodes[i]; v.Listed {
			l.addVerdict(v)
			b.verdicts[v.Node.Name] = v
		}
	}
	for _, node := range b.p.Orphans {
		entry, _ := l.add(node, nil)
		entry.ConditionsHealthyTimestamp = orphanEnd(l.previous[node], b.in.Now)
	}
	for _, c := range b.out.Created {
		entry := l.byNode[c.Node]
		if entry == nil {
			entry, _ = l.add(c.Node, nil)
		}
		entry.Remediations = append(entry.Remediations, &v1alpha1.Remediation{
			Resource: c.Resource, Started: metav1.NewTime(c.CreationTime), TemplateName: c.Template.Name,
		})
	}
	l.orderSteps()
	slices.SortFunc(l.entries, func(a, b *v1alpha1.UnhealthyNode) int { return strings.Compare(a.Name, b.Name) })
	return l.entries
}

// entryList collects the status's entries of one sync.
type entryList struct {
	b        *statusBuilder
	previous map[string]*v1alpha1.UnhealthyNode
	timedOut map[types.UID]time.Time
	deleted  map[string]bool
	entries  []*v1alpha1.UnhealthyNode
	byNode   map[string]*v1alpha1.UnhealthyNode
}

func newEntryList(b *statusBuilder) *entryList {
	l := &entryList{
		b:        b,
		previous: make(map[string]*v1alpha1.UnhealthyNode, len(b.in.NHC.Status.UnhealthyNodes)),
		timedOut: make(map[types.UID]time.Time, len(b.out.TimedOut)),
		deleted:  make(map[string]bool, len(b.out.Deleted)),
		byNode:   map[string]*v1alpha1.UnhealthyNode{},
	}
	for _, entry := range b.in.NHC.Status.UnhealthyNodes {
		if entry != nil {
			l.previous[entry.Name] = entry
		}
	}
	for _, to := range b.out.TimedOut {
		l.timedOut[to.Resource.UID] = to.At
	}
	for _, del := range b.out.Deleted {
		l.deleted[del.Node] = true
	}
	return l
}

// add returns the node's entry, and whether it is the last status's.
func (l *entryList) add(node string, superseded map[types.UID]time.Time) (*v1alpha1.UnhealthyNode, bool) {
	// The caches do not show the last write yet, or this sync's deletion:
	// the entry that recorded the node stays until a sync sees the result,
	// usually the resource gone and the entry with it, in one write.
	kept := (l.b.in.PendingNodes[node] || l.deleted[node]) && l.previous[node] != nil
	var entry *v1alpha1.UnhealthyNode
	if kept {
		entry = l.previous[node].DeepCopy()
	} else {
		entry = recordOf(node, l.b.in.Remediations[node], l.previous[node], superseded, l.timedOut)
	}
	l.entries = append(l.entries, entry)
	l.byNode[node] = entry
	return entry, kept
}

// addVerdict adds a listed node's entry with its incident's marks.
func (l *entryList) addVerdict(v *NodeVerdict) {
	name := v.Node.Name
	inc := v.incident
	if inc.record == nil {
		// Its last incident ended and left nothing: a relapse starts afresh.
		delete(l.previous, name)
	}
	entry, kept := l.add(name, v.Superseded)
	// A kept entry has its mark already, but for the recovery whose
	// deletion this sync sends: from now on it says so, should the node
	// relapse before the resources are gone.
	if inc.endedAt != nil && (!kept || (v.State == StateRecovering && l.deleted[name])) {
		entry.ConditionsHealthyTimestamp = inc.endedAt.DeepCopy()
	}
	if v.State == StateRecovering && !kept && v.HealthyDelayed {
		entry.HealthyDelayed = ptr.To(true)
	}
}

// orderSteps resumes each entry's steps and puts them in the order they
// started.
func (l *entryList) orderSteps() {
	steps := l.b.p.rules.steps
	created := make(map[types.UID]bool, len(l.b.out.Created))
	for _, c := range l.b.out.Created {
		created[c.Resource.UID] = true
	}
	for _, entry := range l.entries {
		resources := l.b.in.Remediations[entry.Name]
		entry.Remediations = resumeSteps(steps, entry.Remediations, func(uid types.UID) bool {
			return created[uid] || hasResource(resources, uid)
		})
		// Creation times have one-second precision: within a second, the
		// escalation order decides.
		slices.SortStableFunc(entry.Remediations, func(a, b *v1alpha1.Remediation) int {
			if c := a.Started.Compare(b.Started.Time); c != 0 {
				return c
			}
			if c := stepOf(steps, &a.Resource, a.TemplateName) - stepOf(steps, &b.Resource, b.TemplateName); c != 0 {
				return c
			}
			return strings.Compare(a.Resource.Name, b.Resource.Name)
		})
	}
}

// ShowsRemediation says whether a status lists a node with a remediation:
// what the remediation guard (manifests/admission/remediation-guard.yaml)
// reads to refuse deleting the NodeHealthCheck, or changing its selector or
// templates. A resource created while the stored status shows none is one
// the guard cannot see until that status is written.
func ShowsRemediation(status *v1alpha1.NodeHealthCheckStatus) bool {
	return slices.ContainsFunc(status.UnhealthyNodes, func(entry *v1alpha1.UnhealthyNode) bool {
		return entry != nil && len(entry.Remediations) > 0
	})
}

// GuardedCreations bounds a plan's creates by what the remediation guard
// sees (ShowsRemediation of the stored status): while it sees none, one
// create (held: none, while a resource it does not show exists or a write
// of the controller, pending, is not seen yet), so that the guard is blind
// to one create at most, from its round trip until the status write that
// follows; bound once it sees one.
func GuardedCreations(stored *v1alpha1.NodeHealthCheckStatus, resources map[string][]Remediation, pending map[string]bool, bound int) (maxCreations int, held bool) {
	if ShowsRemediation(stored) {
		return bound, false
	}
	if len(pending) > 0 {
		return 1, true
	}
	for _, rs := range resources {
		for _, r := range rs {
			if !r.Deleting {
				return 1, true
			}
		}
	}
	return 1, false
}

// RecordsAnEnd says whether a status records the end of a step or of an
// incident that the stored status does not: a time-out, a deletion, or a
// node's mark of recovery or deselection. That status is the only memory
// of the end (a timed-out step never runs again; a relapse starts afresh),
// so it is written at once, never left to the next sync.
func RecordsAnEnd(stored, status *v1alpha1.NodeHealthCheckStatus, out *Outcome) bool {
	if len(out.TimedOut) > 0 || len(out.Deleted) > 0 {
		return true
	}
	marks := make(map[string]*metav1.Time, len(stored.UnhealthyNodes))
	for _, entry := range stored.UnhealthyNodes {
		if entry != nil {
			marks[entry.Name] = entry.ConditionsHealthyTimestamp
		}
	}
	return slices.ContainsFunc(status.UnhealthyNodes, func(entry *v1alpha1.UnhealthyNode) bool {
		return entry.ConditionsHealthyTimestamp != nil && !entry.ConditionsHealthyTimestamp.Equal(marks[entry.Name])
	})
}
