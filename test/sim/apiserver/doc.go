// Package apiserver is the simulation's API server: it speaks the REST
// protocol that client-go's clients and informers use, in JSON, to the
// controller replicas through a Transport each, and keeps the cluster's
// objects with etcd's semantics. It knows no rule of the spec and no
// controller code: the world (package sim) defines its resources, writes
// to its store, decides its faults, and holds, delays, stalls and ends its
// watches; the checker (package check) reads its store and hears of the
// requests through Hooks.
//
//   - store.go: the objects (Store): one resourceVersion counter,
//     optimistic concurrency, UID preconditions, generations, finalizers,
//     and a history of changes that can be compacted (410 Gone);
//   - http.go: the REST requests (Request), answered as kube-apiserver
//     answers: discovery, get, list, watch, create, update, merge patch,
//     delete, and the status subresource;
//   - door.go: the door (Transport, Call, Fault): reads answered at once,
//     writes parked until the simulation serves them in a fixed order
//     (Server.Settle), each with its fault, and partitions (Hold);
//   - watch.go: one open watch and its stream;
//   - deliver.go: the watches' delivery, delays, stalls and ends, and what
//     an ended watch leaves unseen (WatchHealth);
//   - server.go: the Server, its Hooks, its lock (Locked), CRDs installed
//     and uninstalled, and clients dropped.
package apiserver
