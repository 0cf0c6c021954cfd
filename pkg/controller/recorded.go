package controller

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// addRecorded adds to what a NodeHealthCheck observed the remediations that
// the other NodeHealthChecks' statuses record of kinds that cannot be read
// now (Remediations.Recorded): their nodes are theirs, and a control-plane
// node among them, or one that is gone, is under remediation.
func (c *Controller) addRecorded(nhc *v1alpha1.NodeHealthCheck, obs *remediation.Observation) {
	all, err := c.nhcLister.List(labels.Everything())
	if err != nil {
		return
	}
	others := make([]*v1alpha1.NodeHealthCheck, 0, len(all))
	for _, other := range all {
		if other.UID != nhc.UID {
			others = append(others, c.latest(other))
		}
	}
	for node, owners := range c.resources.Recorded(others) {
		for _, owner := range owners {
			if slices.Contains(obs.OtherOwners[node], owner) {
				continue
			}
			if obs.OtherOwners == nil {
				obs.OtherOwners = map[string][]resource.Owner{}
			}
			obs.OtherOwners[node] = append(obs.OtherOwners[node], owner)
		}
		// A node that is gone may have been a control-plane node: the
		// status does not say, and the resource may still fence it.
		if n, err := c.nodeLister.Get(node); apierrors.IsNotFound(err) || err == nil && v1alpha1.IsControlPlane(n.Labels) {
			obs.BusyControlPlaneNodes[node] = true
		}
	}
}
