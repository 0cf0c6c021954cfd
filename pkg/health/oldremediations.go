package health

import "time"

// The old-remediation rule: a remediation resource older than 48 hours is
// flagged once with upstream's annotation
// (nodehealthcheck.medik8s.io/old-remediation-cr-flag), counted by the
// nodehealthcheck_old_remediation_cr metric, and every old one is counted
// for nodehealthcheck_old_remediations and its alert.

// OldRemediationAge is the age at which a remediation resource is flagged
// for the old-remediation metric and alert.
const OldRemediationAge = 48 * time.Hour

// flagOld flags resources that just became older than OldRemediationAge,
// and counts every old one.
func (e *evaluation) flagOld(resources []Remediation) {
	for i := range resources {
		r := &resources[i]
		switch at := r.Created.Add(OldRemediationAge); {
		case r.Deleting:
		case r.FlaggedOld:
			e.p.OldRemediations++
		case e.now.Before(at):
			e.deadline(at)
		default:
			e.p.FlagOld = append(e.p.FlagOld, r.Ref)
			e.p.OldRemediations++
		}
	}
}
