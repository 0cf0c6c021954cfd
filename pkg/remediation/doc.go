// Package remediation manages remediation resources of any group, version and
// kind: it resolves and validates remediation templates, generates the
// remediation resources from them, creates, annotates and deletes them
// through the dynamic client, and reads them back from dynamic informers,
// one per kind that some NodeHealthCheck uses (internal/kinds).
package remediation
