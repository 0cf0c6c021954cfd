// Package remediation keeps remediation resources of any group, version and
// kind, in two rooms that New builds together: the Observer resolves and
// validates templates, keeps a dynamic informer running for each kind some
// NodeHealthCheck uses (internal/kinds), and reads what the caches show of
// a NodeHealthCheck (Seen); the Writer generates remediation resources from
// templates, and creates, annotates and deletes them through the dynamic
// client in the kinds the Observer's Watch resolved, booking each create in
// the ledger of writes under way (internal/inflight) that the Observer
// reads. pkg/gather makes a decision's input of what the Observer reads;
// the controller decides and orders the writes; nothing here calls back up.
package remediation
