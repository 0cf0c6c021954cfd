// Package sim plays generated histories against the real controller in a
// simulated cluster, inside a testing/synctest bubble whose clock is
// virtual, and checks every invariant after every change (make sim).
//
// The packages, by role:
//
//   - sim (this package): the world and its actors (world.go, actors.go:
//     kubelets, an operator, remediators, the garbage collector,
//     node-maintenance-operator), the controller's replicas and leadership
//     (replica.go, leadership.go: crashes, partitions, the write deadline,
//     the faults each request meets), playing a history (sim.go, play.go),
//     and the tests (sim_test.go: TestHistories and its -sim.* flags;
//     rulebreaks_test.go);
//   - apiserver: the simulated API server, its store, its door and its
//     watches;
//   - check: the checker, which states the spec's rules as invariants
//     from the objects at the API server;
//   - gen: histories, their generator and their shrinking;
//   - cluster: the names all of them share: the resources, and the
//     remediators' kinds.
package sim
