// Package remediation keeps remediation resources of any group, version and
// kind, in two rooms that New builds together: the Observer resolves and
// validates templates, keeps a dynamic informer running for each kind some
// NodeHealthCheck uses (internal/kinds), and reads them from the caches into
// an Observation; the Writer generates remediation resources from templates,
// and creates, annotates and deletes them through the dynamic client, booking
// each create in the ledger of writes under way that the Observer reads. The
// controller decides and orders the writes; nothing here calls back up.
package remediation
