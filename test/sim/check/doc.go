// Package check is the simulation's checker: it states each rule of the
// spec as an invariant and checks it after every change at the API server
// and every wake-up, naming the invariant a failure breaks (Violation).
//
// It reads the cluster only as the API server has it (apiserver.Store,
// and the requests the server's hooks show it: Observe, Attempt, Write,
// LostAnswer, Shown), plus the world's facts it is handed explicitly
// (Config: whether the cluster is calm, which replica leads, the lease
// namespace and duration, the bound on statuses; LeaderStarted;
// KindForbidden; Stepped, when a step of the history is played). Every
// expectation comes from that history and the spec, never from what the
// controller decided: storm recovery is computed from the nodes' health,
// not read from the status. It imports no controller package. It imports pkg/apis
// for the spec's types and pkg/health for spec-level helpers only: the
// node lease's name and holder identity, which are the protocol shared
// with other medik8s operators (LeaseName, LeaseHolder, LeaseHolderNHC,
// LeaseNode), when a lease is in force (NodeLease.HeldAt), and a template
// kind's resource kind (RemediationKind); no decision of the controller's.
//
//   - checker.go: the Checker, its Config, and the history of every node
//     and NodeHealthCheck that the invariants read;
//   - requests.go: what it reads of remediation resources and leases, and
//     of the controller's requests as they reach the server;
//   - invariants.go: the rules a create of a remediation resource may
//     break against those there already;
//   - rules.go: pause, exclusion, budget, storm recovery, missing
//     templates, creates sent twice, and deletions while unhealthy;
//   - storm.go: storm recovery as the spec's states define it, computed
//     from the nodes' health and the spec, never from the status;
//   - templates.go: nothing created while a referenced template is
//     missing;
//   - liveness.go: a first remediation in time; ontime.go: a first
//     remediation at the very instant its condition's duration passed,
//     when the cluster was quiet; statuses.go: statuses that show the
//     cluster;
//   - progress.go: deletions once healthy, leases released;
//     escalation.go: escalations on time;
//   - cleanup.go: no deletion before healthyDelay passed (none automatic
//     when it is negative), a confirmation consumed by the recovery it
//     confirms, and orphans deleted;
//   - leases.go: a node lease renewed only while a step runs;
//   - order.go: escalation steps in order, none before its time;
//   - once.go: no step twice in one incident, unless it was resumed;
//   - bound.go: what the status's bound changes: compacted entries, and
//     new incidents that wait for room (StatusFull);
//   - unseen.go: creates answered to a replica whose informer has not
//     shown them;
//   - rechecks.go: when a judgement refused or not yet due may change with
//     nothing else happening (a deadline, a lease or a condition's
//     duration running out, the picture pictureLag old catching up), which
//     NextDue wakes the simulation for.
//
// # Where the checker and the controller must agree
//
// The checker states the spec's rules from the objects at the API server,
// not from the controller's code. The controller sees the cluster only
// through its reads and watches, so where the spec lets it act on what it
// can know, the checker must allow for what it cannot; each allowance is
// such a limit, named here, and none repeats how the controller decides:
//
//   - A resource of a kind the controller may not read, since before the
//     leader started and recorded in no status, is left out of the rules a
//     create breaks (unknowable): no informer of the leader ever listed it.
//   - A kind that cannot be read holds its nodes (KindForbidden,
//     heldWhileForbidden, recordedUnreadable): the nodes its resources
//     remediated when it turned forbidden, or that a status records, owe
//     no new remediation while it stays forbidden, their resources deleted
//     or not, since the controller cannot see them go. While a kind its
//     NodeHealthCheck uses is unreadable, or was within statusBound
//     (unreadableLately), its status need not list every resource, and no
//     deletion, release or escalation of its is due; a recovery's
//     healthyDelay, and an orphan's deletion, count from when all can be
//     read again, or it no longer reads the one that could not be, its
//     spec edited (countdownReadable): the controller stamps the resource,
//     or deletes it, only then.
//   - A create whose answer was lost (uncertain), or that the replica's
//     informer has not shown (unseen.go), holds its node while its kind
//     cannot be read: the controller cannot look it up. The checker does
//     not follow look-ups, so there it expects less, never more.
//   - A remediation create that a fault answered (the checker sees no
//     answer served: a 429, a 500, the server unavailable) holds its node,
//     and, created for a control-plane node, every control-plane node, for
//     unsettledHold after it arrived (heldByUnanswered): after a 500 or a
//     refused connection the controller looks it up, and when that GET
//     fails too, its ledger holds the create until it lapses and is looked
//     up again.
//   - Only a replica answered 201 for a create must not send it again
//     (repeatedCreates): one whose answer was lost, or a new replica, has
//     nothing that tells it the resource exists.
//   - The controller's picture may be pictureLag old: a create breaks
//     pause or exclusion only if that state held both when it arrived and
//     pictureLag before, the budget is counted as generously as either
//     instant allows, and a deletion breaks the anti-loop rule only for a
//     node unhealthy all along pictureLag.
//   - A recovery ends an incident for escalation-not-early only if it
//     lasted pictureLag beyond its healthyDelay, all in calm, and every
//     kind its NodeHealthCheck reads was readable (kindLag after any turned
//     readable again): a shorter one, one a fault or a restart hid, or one
//     the controller could not act on, it may never have seen, and it goes
//     on with its steps' clocks. Creation timestamps hold whole
//     seconds, so a step may come up to a second before its timeout.
//   - The new rules' safety judgements (storm recovery, healthyDelay,
//     missing templates, a condition's deadline) also need the watches
//     current (freshOver, freshThrough): a watch that ended waits out its
//     back-off, and until it watches again the controller's picture of
//     its kind is as old as the outage, which calm does not tell.
//   - Storm recovery is judged from the cluster (storm.go), its start
//     from the nodes with a remediation resource against the budget's
//     maximum, as the controller may have seen it at its syncs: a create
//     breaks it only
//     when its start condition held stormStartLag in calm from a change
//     that woke the controller (the storm starts after the creates the
//     budget still allows, sent in two batches at most), at least
//     pictureLag before the create, and nothing since may have ended it:
//     its end condition held from an instant for its cooldown, breaks
//     shorter than pictureLag or during unrest counting as unseen (the
//     controller records a cooldown's start in whole seconds, so it may
//     end up to a second early). No
//     remediation is owed while it may hold: until its end condition held
//     in calm from a change that woke the controller for its cooldown and
//     pictureLag more.
//   - A confirmation confirms one recovery: it breaks its scope by
//     releasing a resource created after a delete it released, only when
//     calm held pictureLag after that delete (the controller removes the
//     annotation in that sync, after the deletes went through).
//   - A deselection, or a node gone, ends an incident whatever
//     healthyDelay once it lasted pictureLag in calm, its kinds readable
//     (recognisedIncidentStart); a recovery ends it once it lasted its
//     healthyDelay and pictureLag more.
//   - A deletion breaks healthyDelay only for a node that stayed selected
//     since its resource was created, not confirmed pictureLag around the
//     delete, in calm, and that the controller saw unhealthy within
//     healthyDelay before (a span pictureLag long from the change that
//     began it, in calm, its kinds readable); a recovery as long as
//     healthyDelay before made the deletion due, and it stays due. The
//     controller stamps a recovery's start in whole seconds, so the delay
//     may end up to a second early.
//   - A create breaks a missing template only once the template has been
//     missing for templateLag, its kind readable and served: a template
//     read with GET is used for 30 s.
//   - A first remediation is owed at the instant its condition's duration
//     passed (onTimeBound) only when no step of the history was played
//     since the condition began and calm held since quietLead before:
//     else within livenessBound.
//   - A step runs once in an incident that began at the latest instant it
//     may have (incidentStart, as escalation-on-time counts it): any
//     recovery the controller may have seen, however short, may have
//     ended the last one, and a relapse starts at the first step.
//   - A compacted status may leave out the record of a resource that shows
//     itself timed out (the annotation) when it records a later step timed
//     out (compactedAway). A first remediation may wait while the status
//     says it has no room (StatusFull), only with a small bound
//     (Config.StatusBytes) and while another incident of its
//     NodeHealthCheck is under way, whose end makes room (statusFull).
//     A small bound may leave an entry out whole once a resource of its
//     NodeHealthCheck is of a step the spec no longer has (outgrown): the
//     room of an incident is counted at the spec's steps.
//   - A lease renewal is not judged while a watch is stalled, for leaseLag
//     after a stalled watch ended, or while a watch that ended has not
//     been opened again (watchLag): a stalled watch looks like a quiet one
//     to its client, and until it has watched again it acts on the picture
//     from before; a watch delay widens the lag by what it held back. A
//     lease write whose answer was lost counts as an attempt to start a
//     step (LostAnswer): it landed, and the controller saw an error.
//   - The liveness bounds count from calm (Config.Calm): no fault window,
//     no partition, no delayed or stalled watch. The controller cannot act
//     on what it cannot reach or has not been shown.
package check
