package sim

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
	"github.com/nodehealthcheck/nhc-controller/test/sim/gen"
)

// finalizer is the simulated remediators' finalizer.
const finalizer = "sim.medik8s.io/remediation"

// playStep plays one step.
func (s *sim) playStep(step gen.Step) {
	s.locked(s.check.Stepped)
	switch step.Op {
	case gen.OpCrash:
		s.crash()
	case gen.OpPartition:
		s.partition(step.Duration)
	default:
		s.locked(func() { s.apply(step) })
	}
}

// apply plays one step of the actors: they write straight to the API
// server's store, as their own clients would; the state is locked.
func (s *sim) apply(step gen.Step) {
	st := s.server.Store()
	switch step.Op {
	case gen.OpCondition:
		s.setNodeCondition(step)
	case gen.OpAddNode:
		s.addNode(step)
	case gen.OpDeleteNode:
		_, _ = st.Remove(cluster.Nodes, "", step.Node, &metav1.DeleteOptions{})
	case gen.OpRelabel, gen.OpRole, gen.OpExclude, gen.OpConfirm:
		s.editNodeMeta(step)
	case gen.OpCreateNHC:
		if _, err := st.Get(cluster.NodeHealthChecks, "", step.NHC); err == nil {
			return
		}
		s.mustCreate(cluster.NodeHealthChecks, toUnstructured(nhcObject(step.NHC, step.Spec)))
	case gen.OpEditNHC:
		s.edit(cluster.NodeHealthChecks, "", step.NHC, false, func(u *unstructured.Unstructured) {
			u.Object["spec"] = toUnstructured(nhcObject(step.NHC, step.Spec).Spec).Object
		})
	case gen.OpPause:
		s.pauseNHC(step)
	case gen.OpDeleteNHC:
		if gone, err := st.Remove(cluster.NodeHealthChecks, "", step.NHC, &metav1.DeleteOptions{}); err == nil {
			s.collectGarbage(gone.GetUID())
		}
	case gen.OpTemplate:
		s.setTemplate(step)
	case gen.OpInstall:
		s.install(step.Kind, step.On)
	case gen.OpForbid:
		s.server.Forbid(step.Kind.Remediation(), step.On)
		s.server.Forbid(step.Kind.Template(), step.On)
		s.check.KindForbidden(step.Kind, step.On)
	case gen.OpRemediator:
		s.remediate(step.Kind, step.Behaviour)
	case gen.OpNMO:
		s.nodeMaintenance(step.Node, step.On)
	case gen.OpDeny:
		s.deny(step.Kind, step.Node, step.On)
	case gen.OpCrash, gen.OpPartition:
		// Played by playStep, outside the lock: a stop waits for the
		// replica's goroutines.
	case gen.OpFaults:
		s.faultMode, s.faultUntil = step.Fault, time.Now().Add(step.Duration)
	case gen.OpWatchDelay:
		// Every watch, new ones too, holds its events back for the
		// step's duration.
		s.server.DelayWatches(time.Now().Add(step.Duration))
	case gen.OpWatchStall:
		s.server.StallWatches(step.Resource)
	case gen.OpWatchBreak:
		if step.On {
			st.Compact()
		}
		s.server.EndWatches()
	case gen.OpWatchResume:
		s.server.EndStalledWatches()
	}
}

// setNodeCondition plays OpCondition: the node's condition is set.
func (s *sim) setNodeCondition(step gen.Step) {
	s.edit(cluster.Nodes, "", step.Node, true, func(u *unstructured.Unstructured) {
		var node corev1.Node
		cluster.FromUnstructured(u, &node)
		setCondition(&node, corev1.NodeConditionType(step.Condition), corev1.ConditionStatus(step.Status), step.Skew)
		u.Object["status"] = toUnstructured(node.Status).Object
	})
}

// addNode plays OpAddNode: a Ready node, unless it exists.
func (s *sim) addNode(step gen.Step) {
	if _, err := s.server.Store().Get(cluster.Nodes, "", step.Node); err == nil {
		return
	}
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: step.Node, Labels: nodeLabels(step.Pool, step.ControlPlane)}}
	setCondition(node, corev1.NodeReady, corev1.ConditionTrue, 0)
	s.mustCreate(cluster.Nodes, toUnstructured(node))
}

// editNodeMeta plays OpRelabel, OpRole, OpExclude and OpConfirm: the
// node's labels or annotations change.
func (s *sim) editNodeMeta(step gen.Step) {
	s.edit(cluster.Nodes, "", step.Node, false, func(u *unstructured.Unstructured) {
		labels, annotations := u.GetLabels(), u.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		switch step.Op {
		case gen.OpRelabel:
			labels[poolLabel] = step.Pool
		case gen.OpRole:
			delete(labels, v1alpha1.ControlPlaneRoleLabel)
			if step.ControlPlane {
				labels[v1alpha1.ControlPlaneRoleLabel] = ""
			}
		case gen.OpExclude:
			delete(labels, v1alpha1.ExcludeFromRemediationLabel)
			if step.On {
				labels[v1alpha1.ExcludeFromRemediationLabel] = "true"
			}
		case gen.OpConfirm:
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = ""
		}
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
	})
}

// pauseNHC plays OpPause: a pause request is set or removed.
func (s *sim) pauseNHC(step gen.Step) {
	s.edit(cluster.NodeHealthChecks, "", step.NHC, false, func(u *unstructured.Unstructured) {
		if step.On {
			_ = unstructured.SetNestedStringSlice(u.Object, []string{"simulated maintenance"}, "spec", "pauseRequests")
		} else {
			unstructured.RemoveNestedField(u.Object, "spec", "pauseRequests")
		}
	})
}

// setTemplate plays OpTemplate: the template is deleted, or created unless
// it exists or its kind is not served.
func (s *sim) setTemplate(step gen.Step) {
	st := s.server.Store()
	k := step.Kind
	if !step.On {
		_, _ = st.Remove(k.Template(), templateNamespace, step.Template, &metav1.DeleteOptions{})
		return
	}
	if _, err := st.Get(k.Template(), templateNamespace, step.Template); err == nil || !st.Served(k.Template()) {
		return
	}
	t := object(cluster.RemediatorGroup+"/"+cluster.RemediatorVersion, string(k)+"RemediationTemplate", templateNamespace, step.Template)
	t.SetAnnotations(map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"})
	t.Object["spec"] = map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot"}}}
	s.mustCreate(k.Template(), t)
}

func nodeLabels(pool string, controlPlane bool) map[string]string {
	labels := map[string]string{poolLabel: pool}
	if controlPlane {
		labels[v1alpha1.ControlPlaneRoleLabel] = ""
	}
	return labels
}

// setCondition sets a node condition as a kubelet does: its transition time
// moves only when its status changes, shifted by a skewed clock.
func setCondition(node *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus, skew time.Duration) {
	now := metav1.NewTime(time.Now().Add(skew).Truncate(time.Second))
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type == typ {
			if c.Status != status {
				c.Status, c.LastTransitionTime = status, now
			}
			c.LastHeartbeatTime = now
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: typ, Status: status, LastTransitionTime: now, LastHeartbeatTime: now})
}

// nhcObject is a NodeHealthCheck as an operator writes it.
func nhcObject(name string, spec *gen.NHCSpec) *v1alpha1.NodeHealthCheck {
	nhc := &v1alpha1.NodeHealthCheck{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeHealthCheck"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	nhc.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: poolLabel, Operator: metav1.LabelSelectorOpIn, Values: spec.Pools}}}
	for _, c := range spec.Conditions {
		nhc.Spec.UnhealthyConditions = append(nhc.Spec.UnhealthyConditions, v1alpha1.UnhealthyCondition{
			Type: corev1.NodeConditionType(c.Type), Status: corev1.ConditionStatus(c.Status), Duration: metav1.Duration{Duration: c.Duration},
		})
	}
	switch {
	case spec.MaxUnhealthy != "":
		nhc.Spec.MaxUnhealthy = ptr.To(intstr.Parse(spec.MaxUnhealthy))
	case spec.MinHealthy != "":
		nhc.Spec.MinHealthy = ptr.To(intstr.Parse(spec.MinHealthy))
	default:
		nhc.Spec.MinHealthy = ptr.To(intstr.FromInt32(0))
	}
	nhc.Spec.StormRecoveryThreshold = spec.StormThreshold
	if spec.StormCooldown > 0 {
		nhc.Spec.StormCooldownDuration = &metav1.Duration{Duration: spec.StormCooldown}
	}
	ref := func(t gen.TemplateStep) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: cluster.RemediatorGroup + "/" + cluster.RemediatorVersion, Kind: string(t.Kind) + "RemediationTemplate", Namespace: templateNamespace, Name: t.Template}
	}
	if len(spec.Steps) == 1 && spec.Steps[0].Timeout == 0 {
		nhc.Spec.RemediationTemplate = ptr.To(ref(spec.Steps[0]))
	} else {
		for i, t := range spec.Steps {
			nhc.Spec.EscalatingRemediations = append(nhc.Spec.EscalatingRemediations, v1alpha1.EscalatingRemediation{
				RemediationTemplate: ref(t), Order: i, Timeout: metav1.Duration{Duration: t.Timeout},
			})
		}
	}
	if spec.HealthyDelay != nil {
		nhc.Spec.HealthyDelay = &metav1.Duration{Duration: *spec.HealthyDelay}
	}
	if spec.Paused {
		nhc.Spec.PauseRequests = []string{"simulated maintenance"}
	}
	return nhc
}

// collectGarbage is the garbage collector deleting what a deleted
// NodeHealthCheck owned, in the background: a remediator's finalizer keeps
// a resource while it works. Node leases are not owned; they stay.
func (s *sim) collectGarbage(owner types.UID) {
	st := s.server.Store()
	for _, k := range cluster.Kinds {
		gvr := k.Remediation()
		if !st.Served(gvr) {
			continue
		}
		for _, obj := range st.Objects(gvr) {
			if slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == owner }) {
				_, _ = st.Remove(gvr, obj.GetNamespace(), obj.GetName(), &metav1.DeleteOptions{})
			}
		}
	}
}

// install installs or uninstalls a remediator's CRDs: an uninstall deletes
// every resource of its kinds, and ends their watches.
func (s *sim) install(k cluster.Kind, on bool) {
	st := s.server.Store()
	for _, gvr := range []schema.GroupVersionResource{k.Remediation(), k.Template()} {
		switch {
		case st.Served(gvr) == on:
		case on:
			s.server.Install(gvr)
		default:
			s.server.Uninstall(gvr)
		}
	}
}

// remediate is a remediator acting on all its resources at once.
func (s *sim) remediate(k cluster.Kind, b gen.Behaviour) {
	st := s.server.Store()
	gvr := k.Remediation()
	if !st.Served(gvr) {
		return
	}
	for _, obj := range st.Objects(gvr) {
		switch b {
		case gen.BehaveSucceed, gen.BehaveFail:
			status := metav1.ConditionTrue
			if b == gen.BehaveFail {
				status = metav1.ConditionFalse
			}
			s.edit(gvr, obj.GetNamespace(), obj.GetName(), true, func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
					"type": v1alpha1.SucceededCondition, "status": string(status), "reason": "Simulated", "message": "",
					"lastTransitionTime": nowTime().UTC().Format(time.RFC3339),
				}}, "status", "conditions")
			})
		case gen.BehaveExpectDeletion:
			s.edit(gvr, obj.GetNamespace(), obj.GetName(), true, func(u *unstructured.Unstructured) {
				conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				conditions = append(conditions, map[string]any{
					"type": v1alpha1.PermanentNodeDeletionExpectedCondition, "status": string(metav1.ConditionTrue), "reason": "Simulated", "message": "",
					"lastTransitionTime": nowTime().UTC().Format(time.RFC3339),
				})
				_ = unstructured.SetNestedSlice(u.Object, conditions, "status", "conditions")
			})
		case gen.BehaveDelete:
			_, _ = st.Remove(gvr, obj.GetNamespace(), obj.GetName(), &metav1.DeleteOptions{})
		case gen.BehaveFinalize, gen.BehaveRelease:
			s.edit(gvr, obj.GetNamespace(), obj.GetName(), false, func(u *unstructured.Unstructured) {
				if b == gen.BehaveFinalize && u.GetDeletionTimestamp() == nil {
					u.SetFinalizers([]string{finalizer})
				} else {
					u.SetFinalizers(nil)
				}
			})
		}
	}
}

// nodeMaintenance is node-maintenance-operator taking a node's lease, if
// no one holds it, or releasing its own.
func (s *sim) nodeMaintenance(node string, take bool) {
	st := s.server.Store()
	name := health.LeaseName(node)
	current, err := st.Get(cluster.Leases, leaseNamespace, name)
	if !take {
		if err == nil {
			var lease coordinationv1.Lease
			cluster.FromUnstructured(current, &lease)
			if ptr.Deref(lease.Spec.HolderIdentity, "") == nmoHolder {
				_, _ = st.Remove(cluster.Leases, leaseNamespace, name, &metav1.DeleteOptions{})
			}
		}
		return
	}
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(nmoHolder), LeaseDurationSeconds: ptr.To(int32(nmoLeaseDuration / time.Second)), AcquireTime: &now, RenewTime: &now}
	if err != nil {
		lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: leaseNamespace}, Spec: spec}
		s.mustCreate(cluster.Leases, toUnstructured(lease))
		return
	}
	var lease coordinationv1.Lease
	cluster.FromUnstructured(current, &lease)
	held := health.NodeLease{Holder: ptr.Deref(lease.Spec.HolderIdentity, ""), Duration: time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second}
	if lease.Spec.RenewTime != nil {
		held.Renewed = lease.Spec.RenewTime.Time
	}
	if held.HeldAt(time.Now()) && held.Holder != nmoHolder {
		return
	}
	lease.Spec = spec
	_, _ = st.Update(cluster.Leases, toUnstructured(&lease), false)
}
