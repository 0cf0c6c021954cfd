// Package kinds runs the dynamic informers of the remediation kinds, one
// per kind that some NodeHealthCheck uses (and per kind whose cache still
// holds remediation resources), with their caches and indexes, what stops
// them for a lasting error (forbidden, no longer served) and retries them,
// and what the kinds stopped that way showed when they stopped.
//
// Only pkg/remediation's Observer and Writer use it.
package kinds
