package health

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

const ourHolder = "NodeHealthCheck-test"

// withLeases evaluates with node leases, at upstream's default durations.
func withLeases(nhc nhcOption, nodeList []*nodeview.Node, resources map[string][]Remediation, leases map[string]NodeLease) result {
	return decide(Input{
		NHC: testNHC(nhc), Nodes: nodeList, Remediations: resources, Now: now,
		Leases: &Leases{ByNode: leases, Duration: DefaultLeaseDuration, Buffer: DefaultLeaseBuffer},
	})
}

// asIs leaves the test NodeHealthCheck as it is.
func asIs(*v1alpha1.NodeHealthCheck) {}

func lease(holder string, renewedAgo, duration time.Duration) NodeLease {
	return NodeLease{Holder: holder, Acquired: now.Add(-renewedAgo), Renewed: now.Add(-renewedAgo), Duration: duration}
}

func TestLeaseNames(t *testing.T) {
	assert.Equal(t, "NodeHealthCheck-workers", LeaseHolder("workers"))
	assert.Equal(t, "node-worker-1", LeaseName("worker-1"))
	node, ok := LeaseNode("node-worker-1", "")
	assert.True(t, ok)
	assert.Equal(t, "worker-1", node)
	_, ok = LeaseNode("nhc-controller.remediation.medik8s.io", "")
	assert.False(t, ok)
}

// longNodeName is a valid node name of 253 characters that ends with end.
func longNodeName(end string) string {
	label := strings.Repeat("a", 63)
	name := strings.Join([]string{label, label, label, label}, ".")
	return name[:validation.DNS1123SubdomainMaxLength-len(end)] + end
}

// A node name of over 248 characters would make a lease name longer than
// an object name may be: it is shortened with a hash of the whole name, so
// that two such nodes never share a lease, and the owner reference says
// which node it is for.
func TestLeaseNamesOfLongNodeNames(t *testing.T) {
	a, b := longNodeName("-a"), longNodeName("-b")
	for _, node := range []string{a, b, longNodeName("")[:249], longNodeName("")[:248]} {
		name := LeaseName(node)
		assert.Empty(t, validation.IsDNS1123Subdomain(name), "%q", name)
		got, ok := LeaseNode(name, node)
		assert.True(t, ok)
		assert.Equal(t, node, got)
	}
	assert.Equal(t, "node-"+longNodeName("")[:248], LeaseName(longNodeName("")[:248]), "as upstream while it fits")
	assert.NotEqual(t, LeaseName(a), LeaseName(b))
	other, _ := LeaseNode(LeaseName(a), b)
	assert.NotEqual(t, b, other, "an owner the name does not fit is not the node")
}

func TestLeaseHeldAt(t *testing.T) {
	l := lease("other", time.Minute, 2*time.Minute)
	assert.True(t, l.HeldAt(now))
	assert.False(t, l.HeldAt(now.Add(time.Minute)), "expired at renew + duration")
	ahead := lease("other", -time.Minute, time.Second)
	assert.True(t, ahead.HeldAt(now), "a renew time ahead of our clock is in force")
	assert.False(t, (&NodeLease{}).HeldAt(now), "no holder, no lease")
}

func TestCreationTakesTheLease(t *testing.T) {
	cases := []struct {
		name   string
		nhc    nhcOption
		leases map[string]NodeLease
		want   *LeaseRequest
		wait   WaitReason
	}{
		{"no lease: take it for 10m + 1m", asIs, nil,
			&LeaseRequest{Node: "sick", NodeUID: "sick-uid", Holder: ourHolder, Duration: 11 * time.Minute, Restart: true}, WaitNone},
		{"an escalation step: its timeout + 1m", threeSteps(), nil,
			&LeaseRequest{Node: "sick", NodeUID: "sick-uid", Holder: ourHolder, Duration: 6 * time.Minute, Restart: true}, WaitNone},
		{"ours already", asIs, map[string]NodeLease{"sick": lease(ourHolder, time.Minute, 11*time.Minute)},
			&LeaseRequest{Node: "sick", NodeUID: "sick-uid", Holder: ourHolder, Duration: 11 * time.Minute, Restart: true}, WaitNone},
		{"someone else's, expired: taken over", asIs, map[string]NodeLease{"sick": lease("node-maintenance-operator", time.Hour, time.Minute)},
			&LeaseRequest{Node: "sick", NodeUID: "sick-uid", Holder: ourHolder, Duration: 11 * time.Minute, Restart: true}, WaitNone},
		{"someone else's, in force: wait", asIs, map[string]NodeLease{"sick": lease("node-maintenance-operator", time.Minute, time.Hour)},
			nil, WaitLeaseHeld},
		{"another NodeHealthCheck's, in force: wait", asIs, map[string]NodeLease{"sick": lease("NodeHealthCheck-other", 0, time.Minute)},
			nil, WaitLeaseHeld},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sick := testNode("sick", unhealthy)
			sick.UID = "sick-uid"
			d := withLeases(tc.nhc, append(nodes("healthy", 2), sick), nil, tc.leases)
			v := verdictOf(d, "sick")
			assert.Equal(t, tc.wait, v.Waiting)
			if tc.want == nil {
				assert.Empty(t, d.Create)
				require.NotNil(t, v.Lease)
				assert.Equal(t, tc.leases["sick"].Expires(), d.NextDeadline, "looked at again when the lease ends")
				assert.Contains(t, d.LastingEvents(&d.out), "lease/sick")
				assert.Equal(t, "Skipped remediation of node: sick, because node lease is already taken", d.LastingEvents(&d.out)["lease/sick"].Message)
				assert.Contains(t, d.Status.Reason, "1 for their node lease")
				return
			}
			require.Len(t, d.Create, 1)
			assert.Equal(t, tc.want, d.Create[0].Lease)
		})
	}
}

func TestNoLeasesWithoutLeaseInput(t *testing.T) {
	d := evaluate(testNHC(), oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Nil(t, d.Create[0].Lease)
	assert.Empty(t, d.RenewLeases)
	assert.Empty(t, d.ReleaseLeases)
}

func TestLeaseRenewalAndRelease(t *testing.T) {
	running := remediationsFor("sick", snrRemediation("sick", 3*time.Minute))
	cases := []struct {
		name         string
		nodes        []*nodeview.Node
		resources    map[string][]Remediation
		leases       map[string]NodeLease
		wantRenew    []string
		wantRelease  []string
		wantDeadline time.Time
	}{
		{"fresh: renewed at half its duration", oneSick(), running, map[string]NodeLease{"sick": lease(ourHolder, 3*time.Minute, 11*time.Minute)},
			nil, nil, now.Add(-3 * time.Minute).Add(11 * time.Minute / 2)},
		{"half gone: renewed, and again in half its duration", oneSick(), running, map[string]NodeLease{"sick": lease(ourHolder, 6*time.Minute, 11*time.Minute)}, []string{"sick"}, nil, now.Add(11 * time.Minute / 2)},
		{"expired but ours: renewed", oneSick(), running, map[string]NodeLease{"sick": lease(ourHolder, 20*time.Minute, 11*time.Minute)}, []string{"sick"}, nil, time.Time{}},
		{"a healthy node whose resources go: neither renewed nor released until they are gone", nodes("healthy", 3), remediationsFor("healthy-0", snrRemediation("healthy-0", 3*time.Minute)),
			map[string]NodeLease{"healthy-0": lease(ourHolder, 6*time.Minute, 11*time.Minute)}, nil, nil, time.Time{}},
		{"no resources left: released", nodes("healthy", 3), nil, map[string]NodeLease{"healthy-0": lease(ourHolder, time.Minute, 11*time.Minute)}, nil, []string{"healthy-0"}, time.Time{}},
		{"a node no longer selected: released", nodes("healthy", 3), nil, map[string]NodeLease{"gone": lease(ourHolder, time.Minute, 11*time.Minute)}, nil, []string{"gone"}, time.Time{}},
		{"someone else's: left alone", nodes("healthy", 3), nil, map[string]NodeLease{"healthy-0": lease("node-maintenance-operator", time.Minute, 11*time.Minute)}, nil, nil, time.Time{}},
		{"someone else's on a node under remediation: not taken back", oneSick(), running, map[string]NodeLease{"sick": lease("node-maintenance-operator", time.Minute, 11*time.Minute)}, nil, nil, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := withLeases(asIs, tc.nodes, tc.resources, tc.leases)
			var renewed []string
			for _, r := range d.RenewLeases {
				renewed = append(renewed, r.Node)
				assert.Equal(t, tc.leases[r.Node].Duration, r.Duration, "renewed for the duration it was taken for")
			}
			assert.Equal(t, tc.wantRenew, renewed)
			assert.Equal(t, tc.wantRelease, d.ReleaseLeases)
			if !tc.wantDeadline.IsZero() {
				assert.Equal(t, tc.wantDeadline, d.NextDeadline)
			}
			assert.Empty(t, d.Create)
		})
	}
}

func TestPendingNodeKeepsItsLease(t *testing.T) {
	in := Input{
		NHC: testNHC(), Nodes: oneSick(), Now: now, PendingNodes: map[string]bool{"sick": true},
		Leases: &Leases{ByNode: map[string]NodeLease{"sick": lease(ourHolder, 0, 11*time.Minute)}, Duration: DefaultLeaseDuration, Buffer: DefaultLeaseBuffer},
	}
	d := decide(in)
	assert.Empty(t, d.ReleaseLeases, "its resource may have been created a moment ago")
}

// TestANodeLeftToAnotherNodeHealthCheckLetsGoOfItsLease: a node relapses
// after its remediation ended, before its lease was released, and the
// overlap rule now gives it to an older NodeHealthCheck. The lease goes, so
// that the older one, which takes it before it remediates, need not wait
// for it to end; the lease of a node that is this one's to remediate stays.
func TestANodeLeftToAnotherNodeHealthCheckLetsGoOfItsLease(t *testing.T) {
	in := Input{
		NHC: testNHC(createdAt(created)), Nodes: oneSick(), Now: now,
		Leases: &Leases{ByNode: map[string]NodeLease{"sick": lease(ourHolder, time.Minute, 11*time.Minute)}, Duration: DefaultLeaseDuration, Buffer: DefaultLeaseBuffer},
		Claims: map[string][]Claim{"sick": {selecting("older", time.Hour)}},
	}
	d := decide(in)
	assert.Equal(t, WaitOverlap, verdictOf(d, "sick").Waiting)
	assert.Equal(t, []string{"sick"}, d.ReleaseLeases)

	in.Claims = map[string][]Claim{"sick": {selecting("younger", -time.Hour)}}
	d = decide(in)
	assert.Empty(t, d.ReleaseLeases, "the node is this one's to remediate")
}

func TestOverdueLeaseEndsAClassicRemediation(t *testing.T) {
	cases := []struct {
		name         string
		acquiredAgo  time.Duration
		succeeded    metav1.ConditionStatus
		wantTimeOut  bool
		wantAnnotate bool
	}{
		{"before 3 × 10m", 30*time.Minute - time.Second, "", false, false},
		{"at 3 × 10m", 30 * time.Minute, "", true, true},
		{"Succeeded=True: timed out, not annotated", 31 * time.Minute, metav1.ConditionTrue, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := lease(ourHolder, time.Minute, 11*time.Minute)
			l.Acquired = now.Add(-tc.acquiredAgo)
			resources := remediationsFor("sick", snrRemediation("sick", tc.acquiredAgo, succeeded(tc.succeeded)))
			d := withLeases(asIs, oneSick(), resources, map[string]NodeLease{"sick": l})
			if !tc.wantTimeOut {
				assert.Empty(t, d.TimeOut)
				assert.Equal(t, l.Acquired.Add(30*time.Minute), d.NextDeadline)
				return
			}
			require.Len(t, d.TimeOut, 1)
			assert.True(t, d.TimeOut[0].LeaseOverdue)
			assert.Equal(t, tc.wantAnnotate, d.TimeOut[0].Annotate)
			assert.Equal(t, []string{"sick"}, d.ReleaseLeases, "the overdue lease is deleted")
			assert.Empty(t, d.RenewLeases)
			assert.Empty(t, d.Create)
			assert.Equal(t, WaitNoTemplate, verdictOf(d, "sick").Waiting)
			events := d.out.Events()
			require.Len(t, events, 1)
			assert.Equal(t, "Remediation SelfNodeRemediation sick of node sick timed out: its node lease is overdue", events[0].Message)
			require.NotNil(t, entryOf(d, "sick").Remediations[0].TimedOut, "the status records the time-out")

			// The next plan does not take the lease again.
			d.in.NHC.Status = d.Status
			d.in.Leases.ByNode = nil
			next := decide(d.in)
			assert.Empty(t, next.Create)
			assert.Empty(t, next.RenewLeases)
			assert.Empty(t, next.TimeOut)
		})
	}
}

// TestALateStepIsNotOverdueOnAnOldLease: "The timeout field determines
// when the next remediation is invoked" (nodehealthcheck-resource.md,
// EscalatingRemediations), counted from the step's own invocation. Step 2
// (10m) was created 54 minutes after step 1 (5m) timed out, on the lease
// step 1 took: by upstream's count (acquired + 3 × 10m + 5m) it is overdue
// at its first sync. It runs its ten minutes.
func TestALateStepIsNotOverdueOnAnOldLease(t *testing.T) {
	l := lease(ourHolder, time.Minute, 11*time.Minute)
	l.Acquired = now.Add(-60 * time.Minute)
	resources := remediationsFor("sick",
		remediationOf(templateA, "sick", 60*time.Minute, timedOutAnnotation(now.Add(-55*time.Minute))),
		remediationOf(multiOne, "sick", time.Minute))
	d := withLeases(threeSteps(), oneSick(), resources, map[string]NodeLease{"sick": l})
	assert.Empty(t, d.TimeOut, "the late step runs")
	assert.Empty(t, d.Create)
	assert.Empty(t, d.Warnings, "its lease is kept")

	later := decide(Input{
		NHC: testNHC(threeSteps()), Nodes: oneSick(), Remediations: resources, Now: now.Add(9 * time.Minute),
		Leases: &Leases{ByNode: map[string]NodeLease{"sick": l}, Duration: DefaultLeaseDuration, Buffer: DefaultLeaseBuffer},
	})
	require.Len(t, later.TimeOut, 1, "its own timeout ends it")
	assert.False(t, later.TimeOut[0].LeaseOverdue)
}

func TestLeaseOverdueCountsEarlierStepsTimeouts(t *testing.T) {
	// The second step (multiOne, 10m) runs; step A's 5m come on top of 3 × 10m.
	l := lease(ourHolder, time.Minute, 11*time.Minute)
	l.Acquired = now.Add(-33 * time.Minute)
	resources := remediationsFor("sick",
		remediationOf(templateA, "sick", 34*time.Minute, timedOutAnnotation(now.Add(-29*time.Minute))),
		remediationOf(multiOne, "sick", 9*time.Minute))
	d := withLeases(threeSteps(), oneSick(), resources, map[string]NodeLease{"sick": l})
	assert.Empty(t, d.TimeOut)
	assert.Equal(t, now.Add(time.Minute), d.NextDeadline, "the step's own timeout comes first")
}

func TestForeignLeaseHoldsEscalation(t *testing.T) {
	resources := remediationsFor("sick", remediationOf(templateA, "sick", 6*time.Minute))
	d := withLeases(threeSteps(), oneSick(), resources, map[string]NodeLease{"sick": lease("node-maintenance-operator", 0, time.Hour)})
	assert.Empty(t, d.TimeOut, "the running step keeps running")
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitLeaseHeld, verdictOf(d, "sick").Waiting)
}

func TestEscalationStepExtendsTheLease(t *testing.T) {
	// Step A (5m) timed out: step B extends the lease to its own timeout and
	// keeps its acquire time.
	resources := remediationsFor("sick", remediationOf(templateA, "sick", 6*time.Minute))
	d := withLeases(threeSteps(), oneSick(), resources, map[string]NodeLease{"sick": lease(ourHolder, time.Minute, 6*time.Minute)})
	require.Len(t, d.Create, 1)
	assert.Equal(t, &LeaseRequest{Node: "sick", Holder: ourHolder, Duration: 11 * time.Minute}, d.Create[0].Lease)
}

func TestAWaitingUnhealthyNodeKeepsItsLeaseUntilItEnds(t *testing.T) {
	// Paused, the node gets nothing; its lease, maybe taken a moment ago by
	// another process whose resource this one's cache does not show yet,
	// is neither released nor renewed.
	d := withLeases(paused, oneSick(), nil, map[string]NodeLease{"sick": lease(ourHolder, 10*time.Minute, 11*time.Minute)})
	assert.Equal(t, WaitPaused, verdictOf(d, "sick").Waiting)
	assert.Empty(t, d.ReleaseLeases)
	assert.Empty(t, d.RenewLeases)

	// Healthy again: released.
	d = withLeases(paused, nodes("healthy", 3), nil, map[string]NodeLease{"healthy-0": lease(ourHolder, 10*time.Minute, 11*time.Minute)})
	assert.Equal(t, []string{"healthy-0"}, d.ReleaseLeases)
}

// A node's lease is renewed only while this NodeHealthCheck acts on it: not
// once every step timed out, once the node is excluded from remediation
// (node-maintenance-operator's label), or while its running step is past its
// timeout and the next waits. Then it lapses, and it says so once.
func TestALeaseLapsesWhenTheNodeIsNoLongerActedOn(t *testing.T) {
	twoSteps := escalating(escalationStep(templateA, 1, 5*time.Minute), escalationStep(templateB, 2, 5*time.Minute))
	halfGone := map[string]NodeLease{"sick": lease(ourHolder, 4*time.Minute, 6*time.Minute)}
	cases := []struct {
		name      string
		nhc       nhcOption
		nodes     []*nodeview.Node
		resources map[string][]Remediation
		wantWhy   string
	}{
		{"a step runs within its timeout: renewed", twoSteps, oneSick(), remediationsFor("sick", remediationOf(templateA, "sick", 4*time.Minute)), ""},
		{"a classic remediation: renewed", asIs, oneSick(), remediationsFor("sick", snrRemediation("sick", 4*time.Minute)), ""},
		{"paused, a step still runs: renewed", func(n *v1alpha1.NodeHealthCheck) { twoSteps(n); paused(n) }, oneSick(), remediationsFor("sick", remediationOf(templateA, "sick", 4*time.Minute)), ""},
		{"excluded", asIs, append(nodes("healthy", 2), testNode("sick", unhealthy, label(v1alpha1.ExcludeFromRemediationLabel, "true"))),
			remediationsFor("sick", snrRemediation("sick", 4*time.Minute)), lapseExcluded},
		{"every step timed out", twoSteps, oneSick(), remediationsFor("sick",
			remediationOf(templateA, "sick", 12*time.Minute, timedOutAnnotation(now.Add(-7*time.Minute))),
			remediationOf(templateB, "sick", 7*time.Minute, timedOutAnnotation(now.Add(-2*time.Minute)))), lapseExhausted},
		{"the step timed out, the next one waits", func(n *v1alpha1.NodeHealthCheck) { twoSteps(n); paused(n) }, oneSick(),
			remediationsFor("sick", remediationOf(templateA, "sick", 6*time.Minute)), lapseTimedOut},
		{"the step failed, the next one waits", func(n *v1alpha1.NodeHealthCheck) { twoSteps(n); paused(n) }, oneSick(),
			remediationsFor("sick", remediationOf(templateA, "sick", time.Minute, succeeded(metav1.ConditionFalse))), lapseFailed},
		{"recovered, waiting for healthyDelay", healthyDelay(time.Hour), []*nodeview.Node{testNode("sick")},
			remediationsFor("sick", snrRemediation("sick", 4*time.Minute, healthyDelayAnnotation(now.Add(-time.Minute)))), lapseHealthyDelay},
		{"recovered, waiting for a manual confirmation", healthyDelay(-1), []*nodeview.Node{testNode("sick")},
			remediationsFor("sick", snrRemediation("sick", 4*time.Minute)), lapseHealthyDelay},
		{"recovered and excluded", healthyDelay(-1), []*nodeview.Node{testNode("sick", label(v1alpha1.ExcludeFromRemediationLabel, "true"))},
			remediationsFor("sick", snrRemediation("sick", 4*time.Minute)), lapseExcluded},
		{"no longer selected, its remediator deletes the node", asIs, nodes("healthy", 3),
			remediationsFor("sick", snrRemediation("sick", 4*time.Minute, permanentNodeDeletion)), lapseNotSelected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := withLeases(tc.nhc, tc.nodes, tc.resources, halfGone)
			var lapsing []Event
			for _, w := range d.Warnings {
				if w.Reason == ReasonLeaseLapsing {
					lapsing = append(lapsing, w)
				}
			}
			if tc.wantWhy == "" {
				require.Len(t, d.RenewLeases, 1)
				assert.Empty(t, lapsing)
				return
			}
			assert.Empty(t, d.RenewLeases)
			assert.Empty(t, d.ReleaseLeases, "it lapses: node maintenance takes it when it ends")
			require.Len(t, lapsing, 1)
			assert.Equal(t, "Node lease of sick no longer renewed: "+tc.wantWhy+"; it lapses at "+
				now.Add(2*time.Minute).UTC().Format(time.RFC3339)+", so that node maintenance may take the node", lapsing[0].Message)
		})
	}
}

// A paused NodeHealthCheck holds the time-out of a remediationTemplate whose
// lease is overdue; the lease is no longer renewed either: no step runs
// within its time.
func TestAPausedRemediationTemplatesOverdueLeaseLapses(t *testing.T) {
	l := lease(ourHolder, 4*time.Minute, 11*time.Minute)
	l.Acquired = now.Add(-40 * time.Minute)
	resources := remediationsFor("sick", snrRemediation("sick", 40*time.Minute))
	d := withLeases(paused, oneSick(), resources, map[string]NodeLease{"sick": l})
	assert.Empty(t, d.TimeOut, "the pause holds the time-out")
	l.Renewed = now.Add(-6 * time.Minute)
	d = withLeases(paused, oneSick(), resources, map[string]NodeLease{"sick": l})
	assert.Empty(t, d.RenewLeases, "half its duration passed, and it is not renewed")
	require.Len(t, d.Warnings, 1)
	assert.Equal(t, ReasonLeaseLapsing, d.Warnings[0].Reason)
	assert.Contains(t, d.Warnings[0].Message, lapseOverdue)
}

// The create that takes a lease asks for the sync that renews it: no event
// comes of its own lease.
func TestATakenLeaseIsRenewedAtHalfItsDuration(t *testing.T) {
	d := withLeases(asIs, oneSick(), nil, nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, now.Add(11*time.Minute/2), d.NextDeadline)
}

// A step that went overdue while its status write failed, and whose
// resource its remediator then deleted, is not started again: with the
// lease released, its overdue time counts from the incident's first start
// on record.
func TestAnOverdueStepWhoseRecordAndResourceWereLostIsNotStartedAgain(t *testing.T) {
	record := func(age time.Duration) nhcOption {
		return withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "sick", Remediations: []*v1alpha1.Remediation{{
			Resource: snrRemediation("sick", age).Ref, Started: metav1.NewTime(now.Add(-age)), TemplateName: snrTemplate.Name,
		}}}}})
	}
	d := withLeases(record(30*time.Minute), oneSick(), nil, nil)
	assert.Empty(t, d.Create, "past 3 × 10m since its first start")
	require.Len(t, d.TimeOut, 1)
	assert.Equal(t, snrRemediation("sick", 30*time.Minute).Ref, d.TimeOut[0].Resource, "timed out on record")
	assert.Equal(t, WaitNoTemplate, verdictOf(d, "sick").Waiting)

	d = withLeases(record(30*time.Minute-time.Second), oneSick(), nil, nil)
	require.Len(t, d.Create, 1, "within its lease's time the step is created again, on its first clock")
	assert.Empty(t, d.TimeOut)
}

// TestALeaseIsNotSaidToLapseWhileTheNextStepsCreateIsRetried: the create
// of the next step, refused and retried, takes the node's lease again at
// each try; an event that it lapses at a time each try moves would mislead.
func TestALeaseIsNotSaidToLapseWhileTheNextStepsCreateIsRetried(t *testing.T) {
	resources := remediationsFor("sick", remediationOf(templateA, "sick", 6*time.Minute, timedOutAnnotation(now.Add(-time.Minute))))
	d := decide(Input{
		NHC: testNHC(threeSteps()), Nodes: oneSick(), Remediations: resources, Now: now,
		Leases:        &Leases{ByNode: map[string]NodeLease{"sick": lease(ourHolder, time.Minute, 11*time.Minute)}, Duration: DefaultLeaseDuration, Buffer: DefaultLeaseBuffer},
		CreateRetries: map[string]time.Time{"sick": now.Add(10 * time.Second)},
	})
	assert.Equal(t, WaitCreateFailed, verdictOf(d, "sick").Waiting)
	assert.Empty(t, d.Warnings)
}
