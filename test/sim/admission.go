package sim

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// deny plays OpDeny: the remediator of a kind refuses, by its webhook,
// the resources of a node (on), or admits them again.
func (s *sim) deny(k cluster.Kind, node string, on bool) {
	gvr := k.Remediation()
	if s.denied[gvr] == nil {
		s.denied[gvr] = map[string]bool{}
	}
	s.denied[gvr][node] = on
	s.check.NodeDenied(k, node, on)
}

// admit is the remediators' webhooks: a create of a resource for a node
// its remediator refuses is answered 403, as controller-runtime's
// admission.Denied answers, though the controller's role allows it.
func (s *sim) admit(c *apiserver.Call) error {
	if c.Verb != "create" || len(s.denied[c.GVR]) == 0 {
		return nil
	}
	obj := &unstructured.Unstructured{}
	if obj.UnmarshalJSON(c.Body) != nil {
		return nil
	}
	node := resource.TargetNode(obj)
	if !s.denied[c.GVR][node] {
		return nil
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: c.GVR.Group, Resource: c.GVR.Resource}, obj.GetName(),
		fmt.Errorf("admission webhook %q denied the request: node %s cannot be fenced", "validate."+c.GVR.Group, node))
}
