package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/served"
)

// Remediation resources that outlived their NodeHealthCheck, looked for
// after a start or a failover.
//
// A deleted NodeHealthCheck's resources stay while their remediator's
// finalizer holds them, still rebooting or fencing their nodes; while the
// controller runs, their kind stays watched until they are gone
// (kinds.Informers). A new leader remembers nothing of them, and no
// NodeHealthCheck names their kind any more. So, once after it starts,
// the controller watches every kind the API serves beside its template
// kind (the templates' convention: FooRemediation and
// FooRemediationTemplate in one group version), and keeps watched those
// whose cache shows resources of NodeHealthChecks.

// logLookedForLeftovers is logged at level 2 with the kinds looked at.
const logLookedForLeftovers = "Looking for remediation resources that outlived their NodeHealthCheck"

// lookForLeftovers starts an informer for every remediation kind the API
// serves. A group whose discovery failed is left out, as is a kind the
// controller may not list (its informer stops at once): neither can be
// known. An error (discovery failed altogether) is worth a retry.
func (o *Observer) lookForLeftovers(ctx context.Context) error {
	if o.discovery == nil {
		return nil
	}
	lists, err := o.discovery.GroupsAndResources(ctx)
	if err != nil && !served.IsGroupFailed(err) {
		return fmt.Errorf("discovering remediation kinds: %w", err)
	}
	kinds := remediationKinds(lists)
	klog.FromContext(ctx).V(2).Info(logLookedForLeftovers, "resources", kindList(kinds), "discoveryErr", err)
	o.informers.Look(kinds)
	return nil
}

// remediationKinds lists the resources that can be listed and watched
// whose kind is served beside its template kind in the same group version,
// outside Kubernetes' own groups (core and *.k8s.io, where Pod and
// PodTemplate, ResourceClaim and ResourceClaimTemplate follow the same
// naming).
func remediationKinds(lists []*metav1.APIResourceList) []schema.GroupVersionResource {
	var kinds []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group == "" || gv.Group == "k8s.io" || strings.HasSuffix(gv.Group, ".k8s.io") {
			continue
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				served[r.Kind] = true
			}
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") && served[r.Kind+"Template"] &&
				slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
				kinds = append(kinds, gv.WithResource(r.Name))
			}
		}
	}
	return kinds
}
