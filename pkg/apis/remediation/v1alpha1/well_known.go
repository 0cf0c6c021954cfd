package v1alpha1

// Annotations, labels and condition names shared with the upstream
// NodeHealthCheck operator and the remediators. They are part of the wire
// contract: never change their values.
const (
	// ExcludeFromRemediationLabel on a Node keeps it from getting a new
	// remediation when its value is exactly "true".
	ExcludeFromRemediationLabel = "remediation.medik8s.io/exclude-from-remediation"
	// ManuallyConfirmedHealthyAnnotation on a Node (any value) releases its
	// remediation without waiting for spec.healthyDelay. The controller removes
	// it once the node's remediation is gone.
	ManuallyConfirmedHealthyAnnotation = "remediation.medik8s.io/manually-confirmed-healthy"

	// ControlPlaneRoleLabel and MasterRoleLabel mark control-plane nodes; either one is enough.
	ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
	MasterRoleLabel       = "node-role.kubernetes.io/master"

	// NodeNameAnnotation on a remediation resource names the node it remediates.
	NodeNameAnnotation = "remediation.medik8s.io/node-name"
	// TemplateNameAnnotation on a remediation resource names the template it was created from.
	TemplateNameAnnotation = "remediation.medik8s.io/template-name"
	// TimedOutAnnotation on a remediation resource (an RFC 3339 time) tells its
	// remediator that the controller gave up on it and escalated.
	TimedOutAnnotation = "remediation.medik8s.io/nhc-timed-out"
	// HealthyDelayAnnotation on a remediation resource (an RFC 3339 time) is when
	// its node was first seen healthy again, the start of spec.healthyDelay.
	HealthyDelayAnnotation = "remediation.medik8s.io/healthy-delay"
	// OldRemediationAnnotation on a remediation resource marks it as older than 48 hours.
	OldRemediationAnnotation = "nodehealthcheck.medik8s.io/old-remediation-cr-flag"
	// OldRemediationAnnotationValue is the value of OldRemediationAnnotation.
	OldRemediationAnnotationValue = "flagon"
	// MultipleTemplatesSupportAnnotation on a template (any value) says that its
	// remediator accepts several resources per node, so the resources get
	// generated names.
	MultipleTemplatesSupportAnnotation = "remediation.medik8s.io/multiple-templates-support"

	// ControlPlaneNodeLabel on a remediation resource (value "") marks the
	// remediation of a control-plane node.
	ControlPlaneNodeLabel = "remediation.medik8s.io/isControlPlaneNode"
	// PartOfLabel and PartOfValue mark every remediation resource the controller creates.
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOfValue = "node-healthcheck-controller"

	// SucceededCondition on a remediation resource: False means the remediator
	// failed and the next escalation step starts at once; True means it succeeded
	// and the resource never gets TimedOutAnnotation.
	SucceededCondition = "Succeeded"
	// PermanentNodeDeletionExpectedCondition on a remediation resource, when
	// True, means its remediator will delete the node; the resource is kept
	// after the node is gone until it reports Succeeded=True.
	PermanentNodeDeletionExpectedCondition = "PermanentNodeDeletionExpected"
	// ProcessingCondition on a remediation resource is informational only.
	ProcessingCondition = "Processing"
)

// FieldManager names the controller in the managed fields of what it
// writes: remediation resources, node leases, annotations, statuses.
const FieldManager = "nhc-controller"

// OverrideRemediationGuardAnnotation on a NodeHealthCheck, when its value is
// exactly "true", lets it be deleted, and its selector and templates be
// changed, while it has remediations in flight, which the remediation guard
// (manifests/admission/remediation-guard.yaml) otherwise refuses. It is this
// controller's, not upstream's: upstream's webhook has no override.
const OverrideRemediationGuardAnnotation = "remediation.medik8s.io/override-remediation-guard"

// NodeHealthCheck condition types and reasons.
const (
	// ConditionDisabled is True when the NodeHealthCheck cannot work.
	ConditionDisabled = "Disabled"
	// ConditionStormActive is True while storm recovery holds back new remediations.
	ConditionStormActive = "StormActive"
	// ConditionStormCooldownActive is True while a storm's cooldown runs; its
	// lastTransitionTime is when the cooldown started.
	ConditionStormCooldownActive = "StormCooldownActive"
	// ConditionNodesOverlap is True while other NodeHealthChecks select some
	// of this one's nodes too. It appears with the first overlap and is False
	// once the overlap is gone.
	ConditionNodesOverlap = "NodesOverlap"

	// ReasonEnabled is the reason of Disabled=False.
	ReasonEnabled = "NodeHealthCheckEnabled"
	// ReasonTemplateNotFound: a referenced template or its kind does not exist.
	ReasonTemplateNotFound = "RemediationTemplateNotFound"
	// ReasonTemplateInvalid: a template lacks spec.template.spec, or the
	// templates cannot be used together.
	ReasonTemplateInvalid = "RemediationTemplateInvalid"
	// ReasonInvalidSpec: the spec passed admission but cannot be used, for
	// example an object stored before a validation rule existed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNodeLeasesUnavailable: the controller cannot read the node leases
	// it must take before it remediates.
	ReasonNodeLeasesUnavailable = "NodeLeasesUnavailable"
	// ReasonStormThresholdChange is the reason of the storm conditions.
	ReasonStormThresholdChange = "HealthyNodeThresholdChange"
	// ReasonNodesOverlap is the reason of NodesOverlap=True.
	ReasonNodesOverlap = "NodesSelectedByOtherNodeHealthChecks"
	// ReasonNoOverlap is the reason of NodesOverlap=False.
	ReasonNoOverlap = "NoNodesSelectedByOtherNodeHealthChecks"
)
