package gen

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// History is one generated history: its seed, the world's choices and its
// steps. The seed decides the steps, the choices and every fault;
// replaying a history plays the same.
type History struct {
	Seed uint64
	// StatusBytes is the controller's bound on the estimated bytes of a
	// status's unhealthyNodes (controller.Config.StatusBytes); 0 is its
	// default, which a handful of nodes never meets.
	StatusBytes int
	Steps       []Step
}

// Op is what one step does.
type Op string

// The steps of a history. Each is something that happens in a cluster:
// kubelets, an operator with kubectl, remediators, node-maintenance-operator,
// the controller's process, the API server and its watches.
const (
	OpCondition   Op = "condition"    // Node, Condition, Status; Skew shifts lastTransitionTime
	OpAddNode     Op = "add-node"     // Node, Pool, ControlPlane
	OpDeleteNode  Op = "delete-node"  // Node
	OpRelabel     Op = "relabel"      // Node, Pool
	OpRole        Op = "role"         // Node, ControlPlane
	OpExclude     Op = "exclude"      // Node, On
	OpConfirm     Op = "confirm"      // Node: the manually-confirmed-healthy annotation
	OpCreateNHC   Op = "create-nhc"   // NHC, Spec
	OpEditNHC     Op = "edit-nhc"     // NHC, Spec
	OpPause       Op = "pause"        // NHC, On
	OpDeleteNHC   Op = "delete-nhc"   // NHC
	OpTemplate    Op = "template"     // Kind, Template, On: created or deleted
	OpInstall     Op = "install"      // Kind, On: its CRDs installed or uninstalled
	OpForbid      Op = "forbid"       // Kind, On: the controller's role loses or regains it
	OpRemediator  Op = "remediator"   // Kind, Behaviour: what it does to its resources now
	OpNMO         Op = "nmo"          // Node, On: node-maintenance-operator takes or releases the lease
	OpCrash       Op = "crash"        // the leader's process dies; another takes over
	OpPartition   Op = "partition"    // Duration: the leader cannot reach the API server
	OpFaults      Op = "faults"       // Fault, Duration: the API server fails requests
	OpWatchDelay  Op = "watch-delay"  // Duration: every watch delivers this much late
	OpWatchStall  Op = "watch-stall"  // Resource: its watches stop sending, connections open
	OpWatchBreak  Op = "watch-break"  // On: every watch ends; On compacts first (410 Gone)
	OpWatchResume Op = "watch-resume" // stalled watches end, and are watched again
	OpDeny        Op = "deny"         // Kind, Node, On: its remediator's webhook refuses its resources for the node (403), or admits them again
)

// Behaviour is what a remediator does to its resources.
type Behaviour string

const (
	// BehaveSucceed sets Succeeded=True.
	BehaveSucceed Behaviour = "succeed"
	// BehaveFail sets Succeeded=False.
	BehaveFail Behaviour = "fail"
	// BehaveDelete deletes them (a remediator that gave up, or an operator).
	BehaveDelete Behaviour = "delete"
	// BehaveFinalize adds its finalizer; BehaveRelease removes it.
	BehaveFinalize Behaviour = "finalize"
	BehaveRelease  Behaviour = "release"
	// BehaveExpectDeletion sets PermanentNodeDeletionExpected=True, as a
	// remediator that replaces the node does: the controller leaves the
	// resource to it when the node goes or leaves the selector.
	BehaveExpectDeletion Behaviour = "expect-deletion"
)

// Step is one step of a history: after some time passes, one thing happens.
type Step struct {
	After     time.Duration
	Op        Op
	Node      string
	Pool      string
	Condition string
	Status    string
	Skew      time.Duration
	On        bool
	NHC       string
	Spec      *NHCSpec
	Kind      cluster.Kind
	Template  string
	Behaviour Behaviour
	Fault     apiserver.Fault
	Duration  time.Duration
	Resource  string
	// ControlPlane marks a node added or relabelled as control plane.
	ControlPlane bool
}

// NHCSpec is the part of a NodeHealthCheck's spec a history varies.
type NHCSpec struct {
	// Pools are the node pools the selector selects (pool In ...).
	Pools []string
	// Conditions are "Type=Status/duration".
	Conditions []ConditionSpec
	// MaxUnhealthy and MinHealthy are a percentage or count; "" for none
	// (minHealthy 0 when both are).
	MaxUnhealthy, MinHealthy string
	// StormThreshold is stormRecoveryThreshold; nil for none.
	StormThreshold *int32
	// StormCooldown is stormCooldownDuration; 0 for none.
	StormCooldown time.Duration
	// Steps are the templates in order; one without Timeout is a
	// remediationTemplate.
	Steps []TemplateStep
	// HealthyDelay is spec.healthyDelay; nil for none.
	HealthyDelay *time.Duration
	// Paused sets a pause request.
	Paused bool
}

// ConditionSpec is one unhealthy condition.
type ConditionSpec struct {
	Type, Status string
	Duration     time.Duration
}

// TemplateStep is one remediation template.
type TemplateStep struct {
	Kind     cluster.Kind
	Template string
	Timeout  time.Duration
}

func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%-6s %s", s.After, s.Op)
	add := func(k string, v any) { fmt.Fprintf(&b, " %s=%v", k, v) }
	switch s.Op {
	case OpCondition:
		add("node", s.Node)
		add(s.Condition, s.Status)
		if s.Skew != 0 {
			add("skew", s.Skew)
		}
	case OpAddNode:
		add("node", s.Node)
		add("pool", s.Pool)
		add("controlPlane", s.ControlPlane)
	case OpDeleteNode, OpConfirm:
		add("node", s.Node)
	case OpRelabel:
		add("node", s.Node)
		add("pool", s.Pool)
	case OpRole:
		add("node", s.Node)
		add("controlPlane", s.ControlPlane)
	case OpExclude, OpNMO:
		add("node", s.Node)
		add("on", s.On)
	case OpDeny:
		add("kind", s.Kind)
		add("node", s.Node)
		add("on", s.On)
	case OpCreateNHC, OpEditNHC:
		add("nhc", s.NHC)
		fmt.Fprintf(&b, " %s", s.Spec)
	case OpPause:
		add("nhc", s.NHC)
		add("on", s.On)
	case OpDeleteNHC:
		add("nhc", s.NHC)
	case OpTemplate:
		add("kind", s.Kind)
		add("template", s.Template)
		add("on", s.On)
	case OpInstall, OpForbid:
		add("kind", s.Kind)
		add("on", s.On)
	case OpRemediator:
		add("kind", s.Kind)
		add("does", s.Behaviour)
	case OpPartition, OpWatchDelay:
		add("for", s.Duration)
	case OpFaults:
		add("fault", s.Fault)
		add("for", s.Duration)
	case OpWatchStall:
		add("resource", s.Resource)
	case OpWatchBreak:
		add("compact", s.On)
	}
	return b.String()
}

func (n *NHCSpec) String() string {
	var parts []string
	parts = append(parts, "pools="+strings.Join(n.Pools, ","))
	for _, c := range n.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Duration))
	}
	if n.MaxUnhealthy != "" {
		parts = append(parts, "maxUnhealthy="+n.MaxUnhealthy)
	}
	if n.MinHealthy != "" {
		parts = append(parts, "minHealthy="+n.MinHealthy)
	}
	if n.StormThreshold != nil {
		parts = append(parts, fmt.Sprintf("stormThreshold=%d", *n.StormThreshold))
	}
	if n.StormCooldown > 0 {
		parts = append(parts, fmt.Sprintf("stormCooldown=%s", n.StormCooldown))
	}
	for _, t := range n.Steps {
		if t.Timeout > 0 {
			parts = append(parts, fmt.Sprintf("step=%s/%s/%s", t.Kind, t.Template, t.Timeout))
		} else {
			parts = append(parts, fmt.Sprintf("template=%s/%s", t.Kind, t.Template))
		}
	}
	if n.HealthyDelay != nil {
		parts = append(parts, fmt.Sprintf("healthyDelay=%s", *n.HealthyDelay))
	}
	if n.Paused {
		parts = append(parts, "paused")
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// String prints a history, one step a line.
func (h History) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d steps:", h.Seed, len(h.Steps))
	if h.StatusBytes > 0 {
		fmt.Fprintf(&b, " statusBytes=%d", h.StatusBytes)
	}
	b.WriteString("\n")
	for i, s := range h.Steps {
		fmt.Fprintf(&b, "  %3d %s\n", i, s)
	}
	return b.String()
}
