// Package remediation holds the API group of the NodeHealthCheck resource.
package remediation

// GroupName is the API group of NodeHealthCheck, shared with the upstream
// NodeHealthCheck operator so that existing objects and remediators work unchanged.
const GroupName = "remediation.medik8s.io"
