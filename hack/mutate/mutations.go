package main

// mutation is one rule of the spec broken on purpose, minimally: in File,
// each edit's Old, which must occur exactly once, replaced by its New. The
// simulation must catch each; one that survives is an invariant missing.
type mutation struct {
	Name string
	// Rule is the rule broken, in the spec's words.
	Rule  string
	File  string
	Edits []edit
}

type edit struct{ Old, New string }

var mutations = []mutation{
	{
		Name: "control-plane-first", Rule: "one control-plane node at a time, first steps",
		File:  "pkg/health/evaluate.go",
		Edits: []edit{{Old: "if v.Waiting = e.createGate(v); v.Waiting != WaitNone {\n\t\t\tcontinue", New: "if v.Waiting = e.escalationGate(v); v.Waiting != WaitNone {\n\t\t\tcontinue"}},
	},
	{
		Name: "control-plane-escalation", Rule: "one control-plane node at a time, escalation steps",
		File: "pkg/health/escalation.go",
		Edits: []edit{
			{Old: "\t\tgate = e.createGate\n", New: "\t\tgate = e.escalationGate\n"},
			{Old: "if v.Waiting = e.createGate(v); v.Waiting == WaitNone {", New: "if v.Waiting = e.escalationGate(v); v.Waiting == WaitNone {"},
		},
	},
	{
		Name: "budget-loose", Rule: "no remediation while fewer nodes than minHealthy are healthy (one too many)",
		File:  "pkg/health/evaluate.go",
		Edits: []edit{{Old: "Allowed: e.p.Healthy >= minHealthy}", New: "Allowed: e.p.Healthy >= minHealthy-1}"}},
	},
	{
		Name: "budget-strict", Rule: "remediation while minHealthy nodes are healthy (one too few)",
		File:  "pkg/health/evaluate.go",
		Edits: []edit{{Old: "Allowed: e.p.Healthy >= minHealthy}", New: "Allowed: e.p.Healthy > minHealthy}"}},
	},
	{
		Name: "no-deletion-after-recovery", Rule: "a healthy node's remediation is deleted",
		File:  "pkg/health/recovery.go",
		Edits: []edit{{Old: "\t\tif r := &resources[i]; !r.Deleting {\n\t\t\te.p.Delete", New: "\t\tif r := &resources[i]; false && !r.Deleting {\n\t\t\te.p.Delete"}},
	},
	{
		Name: "anti-loop", Rule: "a node whose unhealthy condition changed keeps its remediation",
		File:  "pkg/health/evaluate.go",
		Edits: []edit{{Old: "\t\te.clearHealthyDelay(resources)\n\t\tv.Listed = len(resources) > 0 || previous != nil", New: "\t\tv.incident.endedAt = &metav1.Time{Time: e.now}\n\t\tv.incident.healthySince = e.now\n\t\te.recover(v, resources)\n\t\tv.Listed = len(resources) > 0 || previous != nil"}},
	},
	{
		Name: "no-confirmation", Rule: "never create from a stale picture: the node is confirmed before a create",
		File: "pkg/controller/creates.go",
		Edits: []edit{
			{Old: "live := <-confirmed\n", New: "<-confirmed\n\tlive := verdict{}\n"},
			{Old: "if why := check.inCaches(cr); why != \"\" {", New: "if why := \"\"; why != \"\" {"},
		},
	},
	{
		Name: "ledger-forgets", Rule: "never two for one node: a create stays pending until its informer shows it",
		File:  "pkg/remediation/internal/inflight/ledger.go",
		Edits: []edit{{Old: "\t\tw.uid = uid\n\t\tf.writes[key] = w\n", New: "\t\tw.uid = uid\n\t\tdelete(f.writes, key)\n"}},
	},
	{
		Name: "pause-ignored", Rule: "no new remediation while paused",
		File:  "pkg/health/gates.go",
		Edits: []edit{{Old: "\tcase e.rules.paused():\n", New: "\tcase false:\n"}},
	},
	{
		Name: "exclusion-ignored", Rule: "no new remediation of an excluded node",
		File:  "pkg/health/conditions.go",
		Edits: []edit{{Old: "return l.Get(v1alpha1.ExcludeFromRemediationLabel) == \"true\"", New: "return l.Get(v1alpha1.ExcludeFromRemediationLabel) == \"never\""}},
	},
	{
		Name: "storm-ignored", Rule: "no new remediation while storm recovery holds",
		File:  "pkg/health/gates.go",
		Edits: []edit{{Old: "\tcase e.p.Storm.Active:\n", New: "\tcase false:\n"}},
	},
	{
		Name: "overlap-ignored", Rule: "one NodeHealthCheck remediates a node that several select",
		File:  "pkg/health/gates.go",
		Edits: []edit{{Old: "\tcase v.RemediatedBy != nil:\n", New: "\tcase false:\n"}},
	},
	{
		Name: "lease-kept", Rule: "a node lease is released once nothing runs on the node",
		File:  "pkg/health/lease.go",
		Edits: []edit{{Old: "if v := verdicts[node]; v == nil || v.RemediatedBy != nil {", New: "if v := verdicts[node]; false && (v == nil || v.RemediatedBy != nil) {"}},
	},
	{
		Name: "lease-kept-from-another", Rule: "a node lease is released once another NodeHealthCheck is to remediate the node",
		File:  "pkg/health/lease.go",
		Edits: []edit{{Old: "if v := verdicts[node]; v == nil || v.RemediatedBy != nil {", New: "if v := verdicts[node]; v == nil {"}},
	},
	{
		Name: "deleted-lease-kept", Rule: "a deleted NodeHealthCheck's node lease is released once no remediation is on the node",
		File:  "pkg/health/nodelease.go",
		Edits: []edit{{Old: "if !busy[node] {", New: "if false && !busy[node] {"}},
	},
	{
		Name: "deleted-lease-released-busy", Rule: "a deleted NodeHealthCheck's node lease holds while its remediation runs",
		File:  "pkg/health/nodelease.go",
		Edits: []edit{{Old: "if !busy[node] {", New: "if true {"}},
	},
	{
		Name: "timeout-restarts", Rule: "a step's timeout counts from its first start",
		File:  "pkg/health/incident.go",
		Edits: []edit{{Old: "return inc.stepStarted().Add(steps[inc.currentStep].timeout)", New: "return inc.current.Created.Add(steps[inc.currentStep].timeout)"}},
	},
	{
		Name: "timeout-early", Rule: "the next step waits for the step's timeout",
		File:  "pkg/health/incident.go",
		Edits: []edit{{Old: "return inc.stepStarted().Add(steps[inc.currentStep].timeout)", New: "return inc.stepStarted().Add(steps[inc.currentStep].timeout / 2)"}},
	},
	{
		Name: "failure-ignored", Rule: "a step whose remediator reports Succeeded=False is followed at once",
		File:  "pkg/health/incident.go",
		Edits: []edit{{Old: "end.failed = !end.at.IsZero() && inc.current != nil && inc.current.Succeeded == metav1.ConditionFalse", New: "end.failed = false && inc.current != nil && inc.current.Succeeded == metav1.ConditionFalse"}},
	},
	{
		Name: "relapse-continues", Rule: "a node that recovered starts again at the first step",
		File:  "pkg/health/incident_end.go",
		Edits: []edit{{Old: "if ended := endedAt(record); ended != nil && !r.Created.After(ended.Time) {", New: "if ended := endedAt(record); false && ended != nil && !r.Created.After(ended.Time) {"}},
	},
	{
		Name: "timeout-ignored", Rule: "the next step starts when a step times out",
		File:  "pkg/health/incident.go",
		Edits: []edit{{Old: "return inc.stepStarted().Add(steps[inc.currentStep].timeout)", New: "return inc.stepStarted().Add(100 * steps[inc.currentStep].timeout)"}},
	},
	{
		Name: "step-repeats", Rule: "within one incident a step that timed out never runs again",
		File:  "pkg/health/incident.go",
		Edits: []edit{{Old: "if rem.TimedOut != nil && !hasResource(resources, rem.Resource.UID) {", New: "if false && rem.TimedOut != nil && !hasResource(resources, rem.Resource.UID) {"}},
	},
	{
		Name: "bound-forgets", Rule: "what the status bound leaves out changes no decision",
		File:  "pkg/health/status_bounds.go",
		Edits: []edit{{Old: "if gone && rem.TimedOut != nil && stepOf(steps, &rem.Resource, rem.TemplateName) < lastTimedOut {", New: "if (gone || true) && rem.TimedOut != nil && stepOf(steps, &rem.Resource, rem.TemplateName) < lastTimedOut {"}},
	},
	{
		Name: "reselected-continues", Rule: "a node selected again starts at the first step, on a fresh clock",
		File:  "pkg/health/status_entries.go",
		Edits: []edit{{Old: "entry.ConditionsHealthyTimestamp = orphanEnd(l.previous[node], b.in.Now)", New: "entry.ConditionsHealthyTimestamp = endedAt(l.previous[node])"}},
	},
	{
		Name: "healthy-delay-from-creation", Rule: "a remediation is deleted only once its node has been healthy for the whole healthyDelay",
		File:  "pkg/health/recovery.go",
		Edits: []edit{{Old: "if ends := start.Add(delay); delay < 0 || e.now.Before(ends) {", New: "if ends := resources[0].Created.Add(delay); delay < 0 || e.now.Before(ends) {"}},
	},
	{
		Name: "orphan-kept-until-succeeded", Rule: "the remediation of a node gone or no longer selected is deleted, unless its remediator expects the node's deletion",
		File:  "pkg/health/recovery.go",
		Edits: []edit{{Old: "if r.Deleting || (r.PermanentNodeDeletionExpected && r.Succeeded != metav1.ConditionTrue) {", New: "if r.Deleting || r.Succeeded != metav1.ConditionTrue {"}},
	},
	{
		Name: "storm-threshold-ignored", Rule: "storm recovery holds until at most stormRecoveryThreshold nodes are unhealthy",
		File:  "pkg/health/budget.go",
		Edits: []edit{{Old: "r := stormRules{threshold: spec.StormRecoveryThreshold}", New: "r := stormRules{}"}},
	},
	{
		Name: "storm-cooldown-from-start", Rule: "storm recovery's cooldown counts from when its end condition starts to hold",
		File:  "pkg/health/storm.go",
		Edits: []edit{{Old: "\t\t\tcooldownStart = e.now\n", New: "\t\t\tcooldownStart = since\n"}},
	},
	{
		Name: "template-missing-ignored", Rule: "nothing is created while a referenced template is missing",
		File:  "pkg/remediation/templates/templates.go",
		Edits: []edit{{Old: "return NotFound(fmt.Sprintf(messageTemplateNotFound, tmpl.Ref.Kind, describe(tmpl), describe(tmpl)))", New: "return nil"}},
	},
	{
		Name: "create-retry-holds-control-plane", Rule: "never let one bad object stop everyone: a node whose create was refused lets the others go first",
		File: "pkg/health/gates.go",
		Edits: []edit{{Old: "if w := e.retryGate(v); w != WaitNone {\n\t\treturn w\n\t}\n\treturn e.controlPlaneGate(v)",
			New: "if w := e.controlPlaneGate(v); w != WaitNone {\n\t\treturn w\n\t}\n\treturn e.retryGate(v)"}},
	},
	{
		Name: "admission-as-role", Rule: "never let one bad object stop everyone: a webhook's 403 refuses that object, not its kind",
		File:  "pkg/remediation/access.go",
		Edits: []edit{{Old: "if w.roleAllows(ctx, verb, gvr, namespace) {", New: "if false && w.roleAllows(ctx, verb, gvr, namespace) {"}},
	},
	{
		Name: "storm-before-remediations", Rule: "storm mode is triggered by number of remediation reaching minHealthy/maxUnhealthy maximum",
		File:  "pkg/health/budget.go",
		Edits: []edit{{Old: "return c.remediations > 0 && c.remediations >= c.observed-c.minHealthy && unhealthy > int(*r.threshold)", New: "return c.healthy <= c.minHealthy && unhealthy > int(*r.threshold)"}},
	},
	{
		Name: "late-step-overdue", Rule: "the timeout field determines when the next remediation is invoked, from the step's own invocation",
		File:  "pkg/health/lease.go",
		Edits: []edit{{Old: "\tif stepStart.After(start) {\n\t\tstart = stepStart\n\t}\n", New: "\t_ = stepStart\n"}},
	},
	{
		Name: "confirmation-outlives-recovery", Rule: "a manual confirmation is removed by the recovery it confirms",
		File:  "pkg/health/recovery.go",
		Edits: []edit{{Old: "\t\treason = DeleteManuallyConfirmed\n\t\te.p.RemoveConfirmation = append(e.p.RemoveConfirmation, v.Node.Name)\n", New: "\t\treason = DeleteManuallyConfirmed\n"}},
	},
	{
		Name: "deselection-as-recovery", Rule: "a deselection ends an incident whatever healthyDelay: selected again, the node starts afresh",
		File:  "pkg/health/incident_end.go",
		Edits: []edit{{Old: "return delayedSince(record) == nil || r.HealthyDelayStart.After(ended.Time)", New: "return false"}},
	},
	{
		Name: "reselected-recovery-as-held", Rule: "a deselection ends an incident: selected again, recovered and relapsed within healthyDelay, the node does not go on with the old step",
		File:  "pkg/health/incident_end.go",
		Edits: []edit{{Old: "return delayedSince(record) == nil || r.HealthyDelayStart.After(ended.Time)", New: "return delayedSince(record) == nil"}},
	},
	{
		Name: "condition-strict", Rule: "an unhealthy condition counts from lastTransitionTime + duration, that instant included",
		File:  "pkg/health/conditions.go",
		Edits: []edit{{Old: "if !now.Before(expires) {", New: "if now.After(expires) {"}},
	},
	{
		Name: "quiet-forgets-the-status", Rule: "a node its status names (an entry, an open record) is decided from, not counted quiet",
		File: "pkg/health/quiet.go",
		Edits: []edit{
			{Old: "\t\t\tif entry != nil && !yield(entry.Name) {", New: "\t\t\tif false && !yield(entry.Name) {"},
			{Old: "r.Finished == nil && !yield(r.TargetName)", New: "false && r.Finished == nil && !yield(r.TargetName)"},
		},
	},
	{
		Name: "quiet-unhealthy", Rule: "a node that holds an unhealthy condition is decided from, not counted quiet",
		File:  "pkg/health/quiet.go",
		Edits: []edit{{Old: "return !confirmed && !conditionsHold(node, q.conditions)", New: "return !confirmed"}},
	},
	{
		Name: "membership-stale", Rule: "a sync decides from the nodes as the cache shows them: a changed condition is placed",
		File:  "pkg/controller/handlers.go",
		Edits: []edit{{Old: "\th.members.Update(updated.Name)\n", New: "\tif !old.Labels.Equal(updated.Labels) {\n\t\th.members.Update(updated.Name)\n\t}\n"}},
	},
}
