// Package health decides, without calling any API, what the controller should
// do for one NodeHealthCheck.
//
// Evaluate takes the NodeHealthCheck (spec and current status), the nodes its
// selector matches, a summary of its remediation resources, and the current
// time. It returns a Decision: a verdict per node, the counters, the
// remediation budget, the storm state, the remediation resources to create,
// time out or delete, the new status, and the earliest future instant at which
// the decision can change. Applying the decision is the job of the remediation
// and controller packages.
//
// Deadlines are inclusive: a condition held for exactly its duration has
// expired, an escalation step is timed out exactly at started+timeout, and a
// healthy delay has passed exactly at its end.
package health
