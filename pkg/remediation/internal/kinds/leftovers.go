package kinds

import "k8s.io/apimachinery/pkg/runtime/schema"

// Remediation resources that outlived their NodeHealthCheck, looked for
// after a start or a failover (pkg/remediation's leftovers.go lists the
// kinds the API serves): their informers run until they synced, and stay
// while they show resources of NodeHealthChecks.

// Look starts the informers of kinds that may hold remediation resources
// of NodeHealthChecks, unless they run or failed. Until one syncs, or its
// grace passes, no NodeHealthCheck decides (LookingWithinGrace), and until
// it syncs, control-plane remediations are unknown (UnknownRemediations).
// Once it synced, it stops unless it shows resources of NodeHealthChecks
// (stopIfUnused).
func (inf *Informers) Look(kinds []schema.GroupVersionResource) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for _, gvr := range kinds {
		if _, running := inf.running[gvr]; running {
			continue
		}
		if _, failed := inf.stopped[gvr]; failed {
			continue
		}
		r := inf.start(gvr, stoppedInformer{})
		r.looking = true
		inf.running[gvr] = r
	}
}

// LookingWithinGrace tells whether an informer started by Look has neither
// synced nor failed, within the grace: what it will show may hold any node.
func (v View) LookingWithinGrace() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range v.running {
		if r.looking && v.clock.Since(r.started) < v.grace {
			return true
		}
	}
	return false
}
