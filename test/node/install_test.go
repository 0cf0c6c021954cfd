// Package node tests the install on a real cluster, in the order a user
// meets it: the release's install file applied to a cluster whose nodes run
// a kubelet, containerd and kube-proxy, and whose node lifecycle controller,
// not the test, says when a node is unhealthy. make test-node starts the
// cluster (hack/node/cluster.sh) and runs it; elsewhere it skips.
package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// unhealthyFor is how long the NodeHealthCheck waits on Ready=Unknown
// before it remediates: the sample's 300s, shortened for the test.
const unhealthyFor = 20 * time.Second

func TestTheInstallOnARealNode(t *testing.T) {
	c := connect(t)
	c.dumpOnFailure(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()

	c.step(t, "a worker joins: its own network namespace, containerd, kubelet and kube-proxy")
	c.script(t, "join", worker)
	for _, node := range []string{controlPlane, worker} {
		c.script(t, "import", node, c.archive)
	}

	installFile := filepath.Join(c.release, "nhc-controller.yaml")
	c.step(t, "kubectl apply -f %s, unchanged", installFile)
	leases := watchLease(ctx, c.kube)
	_, warnings, err := c.run("apply", "-f", installFile)
	require.NoError(t, err)
	assert.NotContains(t, warnings, "PodSecurity", "the Deployment's pod template meets the namespace's Pod Security level")

	pods := c.theDeploymentBecomesReady(t)
	c.theNamespaceEnforcesRestricted(t)

	c.step(t, "one replica leads")
	eventually(t, time.Minute, "a replica to hold the election lease", func() bool { return leases.holder() != "" })
	leader := podOf(leases.holder())
	assert.Contains(t, []string{pods[0].Name, pods[1].Name}, leader)
	t.Logf("the leader: %s", leader)

	c.anAuthorizedScrapeThroughTheService(t, pods[0])

	c.step(t, "a NodeHealthCheck from the sample selects the worker")
	nhc := c.createSampleNHC(t)

	c.theWorkersKubeletStopsAndItIsRemediated(t, nhc)

	c.step(t, "a rolling update of the two replicas")
	before := leases.holder()
	lowestHealthy := c.rollingUpdate(t)
	assert.GreaterOrEqual(t, lowestHealthy, int32(1), "the PodDisruptionBudget's healthy pods during the rolling update")
	after := leases.holder()
	assert.NotEqual(t, podOf(before), podOf(after), "leadership moved to a pod of the new ReplicaSet")
	for _, pod := range c.controllerPods(t) {
		if pod.DeletionTimestamp == nil {
			assert.NotEqual(t, podOf(before), pod.Name, "the old leader's pod is gone")
		}
	}
	c.leadershipWasHandedOver(t, leases)

	c.uninstall(t, nhc, installFile)
	c.step(t, "done")
}

// theDeploymentBecomesReady waits for both replicas to be Ready through
// their probes, one on each node, and returns them.
func (c *cluster) theDeploymentBecomesReady(t *testing.T) []corev1.Pod {
	t.Helper()
	c.step(t, "the Deployment's pods become Ready through their probes")
	var pods []corev1.Pod
	eventually(t, 3*time.Minute, "both replicas Ready", func() bool {
		pods = pods[:0]
		for _, pod := range c.controllerPods(t) {
			if pod.DeletionTimestamp == nil && podReady(&pod) {
				pods = append(pods, pod)
			}
		}
		return len(pods) == 2
	})
	assert.NotEqual(t, pods[0].Spec.NodeName, pods[1].Spec.NodeName, "the replicas spread over the two nodes")
	for _, pod := range pods {
		status := pod.Status.ContainerStatuses[0]
		assert.Zero(t, status.RestartCount, "%s restarted", pod.Name)
		var ready time.Time
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady {
				ready = cond.LastTransitionTime.Time
			}
		}
		t.Logf("%s on %s: Ready %v after its creation, image %s", pod.Name, pod.Spec.NodeName,
			ready.Sub(pod.CreationTimestamp.Time), status.ImageID)
	}
	return pods
}

// theNamespaceEnforcesRestricted shows that the pods were admitted by an
// API server that enforces the restricted level there: a privileged pod
// is refused.
func (c *cluster) theNamespaceEnforcesRestricted(t *testing.T) {
	t.Helper()
	ns, err := c.kube.CoreV1().Namespaces().Get(t.Context(), framework.InstallNamespace, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: framework.InstallNamespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "nhc.local/pause:1",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	_, err = c.kube.CoreV1().Pods(framework.InstallNamespace).Create(t.Context(), privileged, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `violates PodSecurity "restricted:latest"`)
}

// createSampleNHC creates the sample NodeHealthCheck, which selects the
// nodes that are not control-plane nodes, with the test remediator's
// template instead of Self Node Remediation's (not installed here),
// minHealthy 0 (there is one worker) and shorter durations.
func (c *cluster) createSampleNHC(t *testing.T) *v1alpha1.NodeHealthCheck {
	t.Helper()
	for _, file := range []string{"test/crds/remediators/test-remediation.yaml", "test/crds/rbac/test-remediator-role.yaml"} {
		c.must(t, "apply", "-f", filepath.Join(controlplane.RepoRoot(), file))
	}
	c.must(t, "wait", "--for", "condition=Established", "--timeout", "60s", "crd/testremediationtemplates.test.medik8s.io", "crd/testremediations.test.medik8s.io")
	c.env.CreateTemplate(t, "node-failure", nil)

	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "nhc-worker-self-node-remediation.yaml"))
	require.NoError(t, err)
	var nhc v1alpha1.NodeHealthCheck
	require.NoError(t, yaml.UnmarshalStrict(data, &nhc))
	nhc.Spec.RemediationTemplate = ptr.To(framework.TemplateRef("node-failure"))
	nhc.Spec.MinHealthy = ptr.To(intstr.FromInt32(0))
	for i := range nhc.Spec.UnhealthyConditions {
		nhc.Spec.UnhealthyConditions[i].Duration = metav1.Duration{Duration: unhealthyFor}
	}
	created, err := c.env.NHC.RemediationV1alpha1().NodeHealthChecks().Create(t.Context(), &nhc, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, time.Minute, "the NodeHealthCheck to observe the worker, healthy", func() bool {
		got := c.env.GetNHC(t, created.Name)
		return ptr.Deref(got.Status.ObservedNodes, 0) == 1 && ptr.Deref(got.Status.HealthyNodes, 0) == 1
	})
	return created
}

// theWorkersKubeletStopsAndItIsRemediated stops the worker's kubelet (its
// containers, the controller's replica among them, keep running), waits
// for the node lifecycle controller to set Ready=Unknown and for the
// remediation, then starts the kubelet again and waits for the
// remediation's deletion and for both replicas to be Ready again.
func (c *cluster) theWorkersKubeletStopsAndItIsRemediated(t *testing.T, nhc *v1alpha1.NodeHealthCheck) {
	t.Helper()
	var onWorker string
	for _, pod := range c.controllerPods(t) {
		if pod.Spec.NodeName == worker {
			onWorker = pod.Name
		}
	}
	c.step(t, "the worker's kubelet stops (the controller's replica there, %s, keeps running)", onWorker)
	stopped := time.Now()
	c.script(t, "kubelet", "stop", worker)
	ready, noExecuteAdded := c.theWorkerIsUnreachable(t, stopped)

	var remediation time.Time
	eventually(t, unhealthyFor+time.Minute, "the remediation of the worker", func() bool {
		remediations := c.env.Remediations(t, nhc.Name)[worker]
		if len(remediations) == 1 {
			remediation = remediations[0].GetCreationTimestamp().Time
		}
		return len(remediations) == 1
	})
	c.step(t, "the remediation is created, %v after Ready=Unknown (the NodeHealthCheck waits %v)",
		remediation.Sub(ready.LastTransitionTime.Time).Round(time.Second), unhealthyFor)
	assert.GreaterOrEqual(t, remediation.Sub(ready.LastTransitionTime.Time), unhealthyFor-time.Second, "not before the condition's duration")
	if onWorker != "" {
		c.theReplicaOnTheWorkerIsEvicted(t, onWorker, noExecuteAdded)
	}

	c.step(t, "the worker's kubelet starts again")
	c.script(t, "kubelet", "start", worker)
	eventually(t, 2*time.Minute, "the worker Ready again", func() bool {
		return condition(c.node(t, worker), corev1.NodeReady).Status == corev1.ConditionTrue
	})
	c.step(t, "the worker is Ready")
	eventually(t, time.Minute, "the remediation to be deleted", func() bool {
		return len(c.env.Remediations(t, nhc.Name)[worker]) == 0
	})
	c.step(t, "the remediation is deleted")
	eventually(t, 3*time.Minute, "both replicas Ready again", func() bool {
		var ready int
		for _, pod := range c.controllerPods(t) {
			if pod.DeletionTimestamp == nil && podReady(&pod) {
				ready++
			}
		}
		return ready == 2
	})
	c.step(t, "both replicas are Ready again")
}

// theWorkerIsUnreachable waits for the node lifecycle controller to set the
// worker Ready=Unknown and to taint it unreachable, and returns its Ready
// condition and when the NoExecute taint was added.
func (c *cluster) theWorkerIsUnreachable(t *testing.T, stopped time.Time) (corev1.NodeCondition, time.Time) {
	t.Helper()
	var ready corev1.NodeCondition
	eventually(t, 3*time.Minute, "the node lifecycle controller to set the worker Ready=Unknown", func() bool {
		ready = condition(c.node(t, worker), corev1.NodeReady)
		return ready.Status == corev1.ConditionUnknown
	})
	c.step(t, "the worker is Ready=Unknown (%s: %s), %v after its kubelet stopped; last heartbeat %v before",
		ready.Reason, ready.Message, ready.LastTransitionTime.Sub(stopped).Round(time.Second), ready.LastTransitionTime.Sub(ready.LastHeartbeatTime.Time).Round(time.Second))
	eventually(t, time.Minute, "the unreachable taints", func() bool {
		var noExecute, noSchedule bool
		for _, taint := range c.node(t, worker).Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable {
				noExecute = noExecute || taint.Effect == corev1.TaintEffectNoExecute
				noSchedule = noSchedule || taint.Effect == corev1.TaintEffectNoSchedule
			}
		}
		return noExecute && noSchedule
	})
	var noExecuteAdded time.Time
	for _, taint := range c.node(t, worker).Spec.Taints {
		t.Logf("taint %s:%s added %v after Ready=Unknown", taint.Key, taint.Effect, taint.TimeAdded.Sub(ready.LastTransitionTime.Time).Round(time.Second))
		if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
			noExecuteAdded = taint.TimeAdded.Time
		}
	}
	return ready, noExecuteAdded
}

// theReplicaOnTheWorkerIsEvicted waits for the controller's replica on the
// unreachable worker to be evicted, and for its replacement to be left
// Pending.
func (c *cluster) theReplicaOnTheWorkerIsEvicted(t *testing.T, onWorker string, noExecuteAdded time.Time) {
	t.Helper()
	// Its toleration of the unreachable taint is 30 s: the taint
	// manager deletes it then. Without a kubelet it stays
	// Terminating, and its container runs on.
	var deleted time.Time
	eventually(t, 2*time.Minute, "the replica on the worker to be evicted", func() bool {
		pod, err := c.kube.CoreV1().Pods(framework.InstallNamespace).Get(t.Context(), onWorker, metav1.GetOptions{})
		if err == nil && pod.DeletionTimestamp != nil {
			// The deletion timestamp is when its grace period ends.
			deleted = pod.DeletionTimestamp.Add(-time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second)
			return true
		}
		return apierrors.IsNotFound(err)
	})
	c.step(t, "the replica on the worker is evicted, %v after the NoExecute taint; it stays Terminating, its container running, until a kubelet confirms",
		deleted.Sub(noExecuteAdded).Round(time.Second))
	// The Deployment's toleration of the unreachable taint: 30 s.
	assert.InDelta(t, 30, deleted.Sub(noExecuteAdded).Seconds(), 10, "evicted after the Deployment's 30 s toleration")
	var why string
	eventually(t, time.Minute, "its replacement to be created and left Pending", func() bool {
		for _, pod := range c.controllerPods(t) {
			if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodPending {
				for _, cond := range pod.Status.Conditions {
					if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
						why = cond.Message
						return true
					}
				}
			}
		}
		return false
	})
	t.Logf("the replacement is Pending: %s", why)
}

// rollingUpdate restarts the Deployment's pods as an upgrade does and
// waits for the rollout, sampling the PodDisruptionBudget's healthy pods
// meanwhile; it returns the fewest seen.
func (c *cluster) rollingUpdate(t *testing.T) int32 {
	t.Helper()
	lowest := int32(2)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			pdb, err := c.kube.PolicyV1().PodDisruptionBudgets(framework.InstallNamespace).Get(context.Background(), "nhc-controller", metav1.GetOptions{})
			if err == nil && pdb.Status.ObservedGeneration == pdb.Generation {
				lowest = min(lowest, pdb.Status.CurrentHealthy)
			}
		}
	}()
	c.must(t, "rollout", "restart", "deployment/nhc-controller", "-n", framework.InstallNamespace)
	_, _, err := c.run("rollout", "status", "deployment/nhc-controller", "-n", framework.InstallNamespace, "--timeout", "5m")
	close(done)
	<-sampled
	require.NoError(t, err)
	c.step(t, "the rollout is complete")
	return lowest
}

// leadershipWasHandedOver checks every change of leader since the install:
// each went through the old leader's release of the lease, which it writes
// only once its work has stopped (no two leaders), and the next took it
// within the lease's duration (no gap longer than the lease).
func (c *cluster) leadershipWasHandedOver(t *testing.T, leases *leaseHistory) {
	t.Helper()
	handovers := leases.handovers()
	require.NotEmpty(t, handovers)
	for _, h := range handovers {
		t.Logf("handover: %s", h)
		assert.True(t, h.released, "%s: the old leader released the lease", h)
		assert.GreaterOrEqual(t, h.gap, time.Duration(0), "%s: taken after the release", h)
		assert.LessOrEqual(t, h.gap, h.leaseDuration, "%s: within the lease's duration", h)
	}
}

// uninstall deletes the NodeHealthCheck, then the install as the README
// says, kubectl delete -f: everything goes but the lease namespace, which
// other medik8s operators share.
func (c *cluster) uninstall(t *testing.T, nhc *v1alpha1.NodeHealthCheck, installFile string) {
	t.Helper()
	c.step(t, "kubectl delete -f %s", installFile)
	require.NoError(t, c.env.NHC.RemediationV1alpha1().NodeHealthChecks().Delete(t.Context(), nhc.Name, metav1.DeleteOptions{}))
	_, err := c.kube.CoreV1().Namespaces().Get(t.Context(), nodeleases.DefaultNamespace, metav1.GetOptions{})
	require.NoError(t, err, "the controller made the lease namespace when it remediated")
	require.NoError(t, c.env.TakeMaintenanceLease(t))

	out, _, err := c.run("delete", "-f", installFile, "--wait=false")
	require.NoError(t, err)
	assert.Contains(t, out, `deployment.apps "nhc-controller" deleted`)
	eventually(t, 3*time.Minute, "namespace nhc-system to be gone", func() bool {
		_, err := c.kube.CoreV1().Namespaces().Get(t.Context(), framework.InstallNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	c.step(t, "namespace nhc-system is gone")
	leftover, _, err := c.run("get", "-f", installFile, "--ignore-not-found", "-o", "name")
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(leftover), "no object of the install file is left")
	c.env.AssertLeaseNamespaceKept(t)
}
