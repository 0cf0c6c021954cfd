package health

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The status's entries: one for each node the plan lists and each orphan,
// from its incident's record (recordOf), with this sync's creates.

// statusBuilder builds one status (Status): its entries first, then the
// history, the bounds and the conditions.
type statusBuilder struct {
	in  Input
	p   *Plan
	out *Outcome
	// unlisted counts the nodes the bounds left out of unhealthyNodes.
	unlisted int
	// verdicts are the verdicts of the listed nodes, by name.
	verdicts map[string]*NodeVerdict
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
			Resource: c.Resource, Started: apiTime(c.CreationTime), TemplateName: c.Template.Name,
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
	if v.State == StateRecovering && !kept && v.HealthyDelayed && (!inc.keepsMark || delayStarted(l.b.in.Remediations[name], inc.record)) {
		entry.HealthyDelayed = ptr.To(true)
	}
}

// delayStarted tells whether every resource not being deleted shows its
// healthy delay's start (delayStart). A record that keeps a deselection's
// mark says healthyDelayed only then: until the start shows, its mark
// stays a deselection's (leftBehind), and a lost start is stamped again.
func delayStarted(resources []Remediation, record *v1alpha1.UnhealthyNode) bool {
	return !slices.ContainsFunc(resources, func(r Remediation) bool { return !r.Deleting && delayStart(&r, record).IsZero() })
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
