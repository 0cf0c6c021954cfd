package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestWhySaysWhoHoldsTheNodeLease(t *testing.T) {
	t.Parallel()
	const scenario = "why-lease"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	ctx := context.Background()
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "medik8s-leases"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	renewed := metav1.NewMicroTime(time.Now())
	_, err = env.Kube.CoordinationV1().Leases("medik8s-leases").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-" + nodes[0], Namespace: "medik8s-leases"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-maintenance-operator"), LeaseDurationSeconds: ptr.To[int32](3600), AcquireTime: &renewed, RenewTime: &renewed},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoordinationV1().Leases("medik8s-leases").Delete(ctx, "node-"+nodes[0], metav1.DeleteOptions{})
	})
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the controller to wait for the lease", func() bool {
		return strings.Contains(env.GetNHC(t, scenario).Status.Reason, "for their node lease")
	})
	assert.Regexp(t, `^why-lease-00 is selected by why-lease: waiting: its node lease node-why-lease-00 is held by node-maintenance-operator until \S+Z \(node maintenance or another remediation\); it is remediated when the lease is released or expires$`,
		lastLine(nhc(t, "why", nodes[0])))
}
