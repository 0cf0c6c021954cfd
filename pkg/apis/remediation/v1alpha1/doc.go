// Package v1alpha1 is version v1alpha1 of the remediation.medik8s.io API:
// the NodeHealthCheck resource.
//
// +k8s:deepcopy-gen=package
// +groupName=remediation.medik8s.io
package v1alpha1
