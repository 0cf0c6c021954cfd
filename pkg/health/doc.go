// Package health decides, without calling any API, what the controller should
// do for one NodeHealthCheck.
//
// Evaluate takes an Input: the NodeHealthCheck (spec and current status), the
// nodes its selector matches, its remediation resources, the busy
// control-plane nodes, the node leases, the other NodeHealthChecks that claim
// its nodes, and the current time. It returns a Plan: a verdict per node, the
// counters, the remediation budget, the storm state, the remediation
// resources to create, time out or delete, the leases to take, renew or
// release, the events, and the earliest future instant at which the plan can
// change. Carrying out the plan is the job of the remediation and controller
// packages; Status then builds the status from the plan and the Outcome of
// what was done, and Plan.Recheck checks each create just before it is sent.
//
// Deadlines are inclusive: a condition held for exactly its duration has
// expired, an escalation step is timed out exactly at started+timeout, and a
// healthy delay has passed exactly at its end.
package health
