package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// created is when the test NodeHealthCheck was created; peers are older or
// younger than it.
var created = now.Add(-24 * time.Hour)

func peer(name string, age time.Duration) Peer {
	return Peer{Name: name, UID: types.UID(name + "-uid"), Created: created.Add(-age)}
}

// selecting is a claim of a peer that selects the node and whose
// conditions hold on it, as when NodeHealthChecks check the same conditions.
func selecting(name string, age time.Duration) Claim {
	return Claim{Peer: peer(name, age), Selects: true, ConditionsHold: true}
}

// remediatingClaim is a claim of a peer with remediation resources for the node.
func remediatingClaim(c Claim) Claim {
	c.Resources, c.Remediating = true, true
	return c
}

// holdingClaim is a claim of a peer whose status records a step under way
// for the node, its resource gone.
func holdingClaim(c Claim) Claim {
	c.Remediating = true
	return c
}

func createdAt(t time.Time) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.CreationTimestamp = metav1.NewTime(t) }
}

func TestRemediator(t *testing.T) {
	cases := []struct {
		name   string
		claims []Claim
		want   string
	}{
		{"none", nil, ""},
		{"the oldest", []Claim{selecting("b", 0), selecting("a", time.Hour), selecting("c", -time.Hour)}, "a"},
		{"created in the same second: the first name", []Claim{selecting("b", 0), selecting("a", 0)}, "a"},
		{"one with resources keeps the node", []Claim{selecting("old", time.Hour), remediatingClaim(selecting("young", 0))}, "young"},
		{"of two with resources, the older", []Claim{remediatingClaim(selecting("young", 0)), remediatingClaim(selecting("old", time.Hour))}, "old"},
		{"resources of one that no longer selects the node", []Claim{selecting("old", time.Hour), {Peer: peer("gone", 0), Resources: true, Remediating: true}}, "gone"},
		{"a step under way on record keeps the node", []Claim{selecting("old", time.Hour), holdingClaim(selecting("young", 0))}, "young"},
		{"resources before an older one's step on record", []Claim{holdingClaim(selecting("old", time.Hour)), remediatingClaim(selecting("young", 0))}, "young"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if i := Remediator(tc.claims); i >= 0 {
				got = tc.claims[i].Name
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestClaimsOn(t *testing.T) {
	workers := labels.SelectorFromSet(labels.Set{"role": "worker"})
	conditions := testNHC(asIs).Spec.UnhealthyConditions
	peers := []SelectingPeer{{Peer: peer("workers", time.Hour), Selector: workers, Conditions: conditions}, {Peer: peer("broken", 0)}}
	owners := map[string][]Peer{"w-0": {peer("workers", time.Hour)}, "infra-0": {peer("infra", 0)}}
	list := []*nodeview.Node{testNode("w-0", label("role", "worker")), testNode("w-1", label("role", "worker"), unhealthy), testNode("infra-0"), testNode("alone")}

	holding := map[string][]Peer{"w-1": {peer("holder", 0)}}
	claims := ClaimsOn(list, peers, owners, holding)
	assert.Equal(t, map[string][]Claim{
		"w-0":     {{Peer: peer("workers", time.Hour), Selects: true, Resources: true, Remediating: true}},
		"w-1":     {selecting("workers", time.Hour), {Peer: peer("holder", 0), Remediating: true}},
		"infra-0": {{Peer: peer("infra", 0), Resources: true, Remediating: true}},
	}, claims, "a peer without a selector selects nothing; the peer's conditions hold on w-1 only; a step on record holds without resources")
}

func TestAnotherNodeHealthCheckRemediatesASharedNode(t *testing.T) {
	cases := []struct {
		name      string
		claims    []Claim
		resources map[string][]Remediation
		// wantBy is the NodeHealthCheck that remediates "sick" instead of this one.
		wantBy      string
		wantBecause string
	}{
		{"an older one selects it", []Claim{selecting("older", time.Hour)}, nil,
			"older", "NodeHealthCheck older selects it too and remediates it, being older; make the selectors disjoint"},
		{"one of the same second whose name comes first", []Claim{selecting("aaa", 0)}, nil,
			"aaa", "NodeHealthCheck aaa selects it too and remediates it: both were created in the same second, and its name comes first; make the selectors disjoint"},
		{"a younger one remediates it already", []Claim{remediatingClaim(selecting("younger", -time.Hour))}, nil,
			"younger", "NodeHealthCheck younger is remediating it (remediation resources, or a step under way in its status), and this one leaves it alone until that ends; make the selectors disjoint"},
		{"one that no longer selects it has resources for it", []Claim{{Peer: peer("former", -time.Hour), Resources: true, Remediating: true}}, nil,
			"former", "NodeHealthCheck former is remediating it (remediation resources, or a step under way in its status), and this one leaves it alone until that ends; make the selectors disjoint"},
		{"this one is older", []Claim{selecting("younger", -time.Hour)}, nil, "", ""},
		{"this one remediates it already", []Claim{selecting("older", time.Hour)}, remediations(snrRemediation("sick", time.Minute)), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{NHC: testNHC(createdAt(created)), Nodes: oneSick(), Remediations: tc.resources, Claims: map[string][]Claim{"sick": tc.claims}, Now: now}
			d := decide(in)
			v := verdictOf(d, "sick")
			assert.Equal(t, 3, d.Observed, "the node is observed")
			assert.Equal(t, 2, d.Healthy, "and not healthy")
			if tc.wantBy == "" {
				assert.Nil(t, v.RemediatedBy)
				assert.NotEqual(t, WaitOverlap, v.Waiting)
				return
			}
			require.NotNil(t, v.RemediatedBy)
			assert.Equal(t, tc.wantBy, v.RemediatedBy.Name)
			assert.Equal(t, WaitOverlap, v.Waiting)
			assert.Empty(t, d.Create, "the node is left alone")
			assert.Equal(t, now.Add(WaitRetry), d.NextDeadline, "looked at again should no event come")
			entry := entryOf(d, "sick")
			require.NotNil(t, entry, "an unhealthy node is listed")
			assert.Empty(t, entry.Remediations, "with no remediation of this one")
			assert.Equal(t, v1alpha1.PhaseEnabled, d.Status.Phase)
			assert.Equal(t, "NHC is enabled, no ongoing remediation; 1 unhealthy nodes wait: 1 left to the NodeHealthChecks that remediate them ("+tc.wantBy+")", d.Status.Reason)

			x := d.Explain()
			require.Len(t, x, 1)
			assert.Equal(t, tc.wantBy, x[0].RemediatedBy)
			assert.Equal(t, tc.wantBecause, x[0].Because)
			forecast := ForecastFirstRemediations(in, now.Add(time.Hour))
			assert.Equal(t, tc.wantBecause, forecast["sick"].Because)
		})
	}
}

func TestAnOlderNodeHealthCheckWithResourcesHoldsBackTheEscalationOfAYoungerOne(t *testing.T) {
	resources := remediations(remediationOf(templateA, "sick", time.Hour))
	in := Input{NHC: testNHC(threeSteps(), createdAt(created)), Nodes: oneSick(), Remediations: resources, Now: now,
		Claims: map[string][]Claim{"sick": {remediatingClaim(selecting("older", time.Hour))}}}
	d := decide(in)
	assert.Equal(t, WaitOverlap, verdictOf(d, "sick").Waiting)
	assert.Empty(t, d.TimeOut, "the running step keeps running")
	assert.Empty(t, d.Create, "and does not escalate")

	in.Claims = map[string][]Claim{"sick": {remediatingClaim(selecting("younger", -time.Hour))}}
	d = decide(in)
	assert.Len(t, d.TimeOut, 1, "the older one escalates")
	assert.Len(t, d.Create, 1)
}

func TestNodesOverlapConditionAndEvent(t *testing.T) {
	list := append(nodes("healthy", 3), testNode("sick", unhealthy))
	claims := map[string][]Claim{
		"healthy-0": {selecting("b", time.Hour)},
		"healthy-1": {selecting("b", time.Hour), selecting("c", -time.Hour)},
		"sick":      {selecting("c", -time.Hour)},
	}
	nhc := testNHC(createdAt(created), minHealthy(intstr.FromInt32(0)))
	d := decide(Input{NHC: nhc, Nodes: list, Claims: claims, Now: now})

	const message = "3 selected nodes are also selected by NodeHealthChecks b, c; only one NodeHealthCheck remediates a node, " +
		"the one already remediating it, else one that can act (not disabled, paused or deleting), the oldest whose unhealthy conditions hold on it: this one remediates 1, b remediates 2. Make the selectors disjoint"
	c := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionNodesOverlap)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonNodesOverlap, c.Reason)
	assert.Equal(t, message, c.Message)
	assert.Equal(t, []Event{{Type: corev1.EventTypeWarning, Reason: EventNodesOverlap, Message: message}}, eventsOf(d, EventNodesOverlap))
	assert.Equal(t, []string{"sick"}, createdNodes(d), "this one is older than c")

	// The next evaluation, from the written status: no second event.
	nhc.Status = d.Status
	d = decide(Input{NHC: nhc, Nodes: list, Claims: claims, Now: now.Add(time.Minute)})
	assert.Empty(t, eventsOf(d, EventNodesOverlap), "one event per overlap")
	assert.Equal(t, c.LastTransitionTime, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionNodesOverlap).LastTransitionTime)

	// The selectors are disjoint again: the condition stays, False.
	nhc.Status = d.Status
	d = decide(Input{NHC: nhc, Nodes: list, Now: now.Add(2 * time.Minute)})
	c = meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionNodesOverlap)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonNoOverlap, c.Reason)
	assert.Equal(t, now.Add(2*time.Minute), c.LastTransitionTime.Time)
	assert.Empty(t, eventsOf(d, EventNodesOverlap))

	// A new overlap is a new event.
	nhc.Status = d.Status
	d = decide(Input{NHC: nhc, Nodes: list, Claims: claims, Now: now.Add(3 * time.Minute)})
	assert.Len(t, eventsOf(d, EventNodesOverlap), 1)

	never := decide(Input{NHC: testNHC(), Nodes: list, Now: now})
	assert.Nil(t, meta.FindStatusCondition(never.Status.Conditions, v1alpha1.ConditionNodesOverlap), "no condition without an overlap ever")
}

func TestNodesOverlapMessageIsBounded(t *testing.T) {
	list := nodes("n", 30)
	claims := map[string][]Claim{}
	for i, node := range list {
		claims[node.Name] = []Claim{selecting(fmt.Sprintf("peer-%02d", i), time.Hour)}
	}
	d := decide(Input{NHC: testNHC(createdAt(created)), Nodes: list, Claims: claims, Now: now})
	message := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionNodesOverlap).Message
	assert.True(t, strings.HasPrefix(message, "30 selected nodes are also selected by NodeHealthChecks peer-00, peer-01, "), message)
	assert.Contains(t, message, "peer-09 and 20 more;")
	assert.Contains(t, message, "this one remediates 0, peer-00 remediates 1, ")
	assert.Contains(t, message, "peer-08 remediates 1 and 21 more. Make the selectors disjoint")
	assert.Less(t, len(message), 650)
}

func eventsOf(d result, reason string) []Event {
	var found []Event
	for _, e := range d.Events {
		if e.Reason == reason {
			found = append(found, e)
		}
	}
	return found
}

// An older NodeHealthCheck whose unhealthy conditions do not hold on a
// shared node (it checks Ready, the node has DiskPressure) would never act:
// the node goes to the one whose conditions hold. One that already has
// resources for the node keeps it, whatever its conditions.
func TestASharedNodeGoesToTheOldestWhoseConditionsHold(t *testing.T) {
	olderElsewhere := Claim{Peer: peer("older", time.Hour), Selects: true}
	cases := []struct {
		name     string
		claims   []Claim
		wantWait WaitReason
		wantWhy  string
	}{
		{"the older one's conditions do not hold: this one remediates", []Claim{olderElsewhere}, WaitNone, ""},
		{"the older one's conditions hold too: the older one", []Claim{selecting("older", time.Hour)}, WaitOverlap,
			"NodeHealthCheck older selects it too and remediates it, being older; make the selectors disjoint"},
		{"the older one already remediates it: it keeps it", []Claim{remediatingClaim(olderElsewhere)}, WaitOverlap,
			"NodeHealthCheck older is remediating it (remediation resources, or a step under way in its status), and this one leaves it alone until that ends; make the selectors disjoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{NHC: testNHC(createdAt(created)), Nodes: oneSick(), Claims: map[string][]Claim{"sick": tc.claims}, Now: now}
			d := decide(in)
			v := verdictOf(d, "sick")
			assert.Equal(t, tc.wantWait, v.Waiting)
			if tc.wantWait == WaitNone {
				assert.Equal(t, []string{"sick"}, createdNodes(d))
				return
			}
			assert.Empty(t, d.Create)
			assert.Equal(t, tc.wantWhy, d.because(&v))
		})
	}

	// Seen from the older one, whose conditions do not hold on the node:
	// the younger one, whose do, remediates it.
	in := Input{NHC: testNHC(createdAt(created)), Nodes: nodes("healthy", 3), Claims: map[string][]Claim{"healthy-0": {selecting("younger", -time.Hour)}}, Now: now}
	by, self := in.RemediatorOf("healthy-0")
	assert.False(t, self)
	assert.Equal(t, "younger", by.Name)
}

// idle is a claim of a peer that selects the node and whose conditions hold
// on it, but that cannot act.
func idle(name string, age time.Duration, why string) Claim {
	c := selecting(name, age)
	c.CannotAct = why
	return c
}

// A NodeHealthCheck that cannot act (disabled, paused, being deleted) does
// not keep a shared node from one that can, unless it has remediation
// resources for it: never two remediations of one node.
func TestASharedNodeGoesToANodeHealthCheckThatCanAct(t *testing.T) {
	younger := selecting("young", 0)
	cases := []struct {
		name   string
		claims []Claim
		want   string
	}{
		{"an older paused one gives way", []Claim{idle("old", time.Hour, cannotActPaused), younger}, "young"},
		{"an older disabled one gives way", []Claim{idle("old", time.Hour, cannotActDisabled), younger}, "young"},
		{"an older one being deleted gives way", []Claim{idle("old", time.Hour, cannotActDeleting), younger}, "young"},
		{"one that cannot act keeps a node it has resources for", []Claim{remediatingClaim(idle("old", time.Hour, cannotActPaused)), younger}, "old"},
		{"being able to act comes before conditions", []Claim{idle("old", time.Hour, cannotActPaused), {Peer: peer("young", 0), Selects: true}}, "young"},
		{"of those that cannot act, the oldest", []Claim{idle("young", 0, cannotActPaused), idle("old", time.Hour, cannotActDisabled)}, "old"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.claims[Remediator(tc.claims)].Name)
		})
	}
}

func TestCannotAct(t *testing.T) {
	disabled := func(status metav1.ConditionStatus) nhcOption {
		return withStatus(v1alpha1.NodeHealthCheckStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionDisabled, Status: status}}})
	}
	deleting := func(n *v1alpha1.NodeHealthCheck) { n.DeletionTimestamp = &metav1.Time{Time: now} }
	cases := []struct {
		name string
		nhc  *v1alpha1.NodeHealthCheck
		want string
	}{
		{"enabled", testNHC(disabled(metav1.ConditionFalse)), ""},
		{"never synced", testNHC(), ""},
		{"disabled", testNHC(disabled(metav1.ConditionTrue)), cannotActDisabled},
		{"paused", testNHC(paused), cannotActPaused},
		{"being deleted", testNHC(deleting), cannotActDeleting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, CannotAct(tc.nhc))
		})
	}
}

// Seen from each side: the younger one remediates the shared node the older
// one, paused, cannot; the older one, being deleted, says why it waits.
func TestAYoungerNodeHealthCheckRemediatesWhatAnOlderOneCannot(t *testing.T) {
	in := Input{NHC: testNHC(createdAt(created)), Nodes: oneSick(), Now: now,
		Claims: map[string][]Claim{"sick": {idle("older", time.Hour, cannotActPaused)}}}
	d := decide(in)
	assert.Equal(t, []string{"sick"}, createdNodes(d))
	assert.Nil(t, verdictOf(d, "sick").RemediatedBy)

	older := testNHC(createdAt(created.Add(-time.Hour)), func(n *v1alpha1.NodeHealthCheck) { n.DeletionTimestamp = &metav1.Time{Time: now} })
	in = Input{NHC: older, Nodes: oneSick(), Now: now, Claims: map[string][]Claim{"sick": {selecting("younger", 0)}}}
	d = decide(in)
	v := verdictOf(d, "sick")
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitOverlap, v.Waiting)
	assert.Equal(t, "NodeHealthCheck younger selects it too and remediates it: this one cannot act (being deleted), and it can; make the selectors disjoint", d.because(&v))
}

func TestClaimsOnCarriesWhetherAPeerCanAct(t *testing.T) {
	workers := labels.SelectorFromSet(labels.Set{"role": "worker"})
	peers := []SelectingPeer{{Peer: peer("paused", time.Hour), Selector: workers, CannotAct: cannotActPaused}}
	claims := ClaimsOn([]*nodeview.Node{testNode("w-0", label("role", "worker"))}, peers, nil, nil)
	assert.Equal(t, cannotActPaused, claims["w-0"][0].CannotAct)
}
