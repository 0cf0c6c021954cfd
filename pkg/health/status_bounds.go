package health

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The status must stay far below etcd's object limit (1.5 MiB) together with
// the spec and metadata, however many nodes fail: a status that cannot be
// written loses the controller's memory. These bounds keep it under about
// 900 KiB.
const (
	// MaxListedNodes bounds status.unhealthyNodes (the CRD's maxItems).
	MaxListedNodes = 5000
	// MaxListedRemediations bounds an entry's remediations (the CRD's
	// maxItems): the newest are kept.
	MaxListedRemediations = 32
	// DefaultStatusBytes bounds the estimated bytes of unhealthyNodes and
	// inFlightRemediations in full (Input.StatusBytes).
	DefaultStatusBytes = 384 << 10
	// memoryFactor: the entries of nodes under remediation, once compacted
	// (compact), may take this many times the status's bytes: they are the
	// incidents' memory, which the bound never gives up for anything else.
	memoryFactor = 2
)

// bound keeps the entries that fit the bounds, listed in full within
// budget bytes; resources are the nodes' resources. The entries of nodes
// under remediation are the incidents' memory (a step's first start, the
// steps that timed out, the end of the last incident): they come first,
// and when they do not all fit in full they are listed compactly
// (compact), with no inFlightRemediations, rather than left out; beyond
// even memoryFactor times the budget (which remembers keeps new incidents
// from reaching), by name. The others (unhealthy, waiting) fill what is
// left, by name. The counters and the reason still count every node.
func bound(steps []step, entries []*v1alpha1.UnhealthyNode, budget int, resources map[string][]Remediation) (listed []*v1alpha1.UnhealthyNode, unlisted int, compacted bool) {
	var memory, others []*v1alpha1.UnhealthyNode
	for _, entry := range entries {
		if n := len(entry.Remediations); n > MaxListedRemediations {
			entry.Remediations = entry.Remediations[n-MaxListedRemediations:]
		}
		if len(entry.Remediations) > 0 {
			memory = append(memory, entry)
		} else {
			others = append(others, entry)
		}
	}
	size := 0
	for _, entry := range memory {
		size += entrySize(entry, true)
	}
	if size > budget {
		compacted, size, budget = true, 0, memoryFactor*budget
		for _, entry := range memory {
			compact(steps, entry, resources[entry.Name])
			size += entrySize(entry, false)
		}
	}
	size = 0
	for _, entry := range slices.Concat(memory, others) {
		size += entrySize(entry, !compacted)
		if len(listed) == MaxListedNodes || size > budget {
			break
		}
		listed = append(listed, entry)
	}
	slices.SortFunc(listed, func(a, b *v1alpha1.UnhealthyNode) int { return strings.Compare(a.Name, b.Name) })
	return listed, len(entries) - len(listed), compacted
}

// compact keeps of an entry what a decision reads (progressOf,
// resumedRecord, ofThisIncident): of the steps that timed out and whose
// resources are gone only the last one, which says where the escalation
// stands; every record of a resource that exists (one that timed out with
// Succeeded=True carries no annotation: its record alone says so); of
// every record its resource's kind, version, namespace and UID but not its
// name, which the resource itself or the history shows.
func compact(steps []step, entry *v1alpha1.UnhealthyNode, resources []Remediation) {
	lastTimedOut := -1
	for _, rem := range entry.Remediations {
		if rem.TimedOut != nil {
			lastTimedOut = max(lastTimedOut, stepOf(steps, &rem.Resource, rem.TemplateName))
		}
	}
	kept := entry.Remediations[:0]
	for _, rem := range entry.Remediations {
		gone := !hasResource(resources, rem.Resource.UID)
		if gone && rem.TimedOut != nil && stepOf(steps, &rem.Resource, rem.TemplateName) < lastTimedOut {
			continue
		}
		rem = rem.DeepCopy()
		rem.Resource.Name = ""
		kept = append(kept, rem)
	}
	entry.Remediations = kept
}

// entrySize estimates an entry's bytes in JSON, with its
// inFlightRemediations item when inFlight.
func entrySize(entry *v1alpha1.UnhealthyNode, inFlight bool) int {
	size := entryBytes(entry.Name)
	if inFlight && len(entry.Remediations) > 0 {
		size += len(entry.Name) + 40
	}
	for _, rem := range entry.Remediations {
		size += recordBytes(&rem.Resource, rem.TemplateName)
	}
	return size
}

// statusBytes is Input.StatusBytes, or DefaultStatusBytes for 0.
func (in *Input) statusBytes() int {
	if in.StatusBytes <= 0 {
		return DefaultStatusBytes
	}
	return in.StatusBytes
}

// entryBytes estimates the bytes of an entry without its records.
func entryBytes(node string) int { return len(node) + 20 }

// recordBytes estimates the bytes of one record of a step in JSON.
func recordBytes(r *corev1.ObjectReference, template string) int {
	return len(r.APIVersion) + len(r.Kind) + len(r.Namespace) + len(r.Name) + len(r.UID) + len(template) + 140
}

// largestRecord is the bytes of a compact record of the spec's largest step.
func (r *rules) largestRecord() int {
	largest := 0
	for _, s := range r.steps {
		ref := corev1.ObjectReference{APIVersion: s.template.APIVersion, Kind: s.kind, Namespace: s.template.Namespace, UID: estimatedUID}
		largest = max(largest, recordBytes(&ref, s.template.Name))
	}
	return largest
}

// estimatedUID stands for a UID in an estimate of bytes.
const estimatedUID = "00000000-0000-0000-0000-000000000000"
