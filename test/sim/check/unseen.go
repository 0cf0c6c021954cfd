package check

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// Creates answered to a replica whose informer has not shown their
// resource. The replica holds their nodes until its informer shows the
// resource or a look-up finds it gone (decisions.md, "What cannot be read
// holds its nodes"); while their kind cannot be read it can do neither,
// and holds them, and the NodeHealthCheck of that name, for as long as it
// runs (a create its stalled watch never showed, whose NodeHealthCheck was
// deleted and made again of that name, holds the new one's node). The
// checker does not follow the look-ups:
// a create found gone while its kind could be read is still held here, so
// the checker expects less of the controller there, never more.

// unseenCreate is a remediation create answered to a replica.
type unseenCreate struct {
	client string
	remediationObj
}

// answered records a remediation create answered to its client.
func (c *Checker) answered(client string, k cluster.Kind, r remediationObj) {
	c.unseen[k] = append(c.unseen[k], unseenCreate{client: client, remediationObj: r})
}

// unseenDelete is a delete of a remediation resource, and the replicas
// shown it: a replica whose watch of the kind stalls before the delete
// still sees the resource, and holds its node as if it were there, until
// its watch or a list shows the delete.
type unseenDelete struct {
	remediationObj
	deleted time.Time
	shownTo map[string]bool
}

// resourceDeleted records a delete of a remediation resource.
func (c *Checker) resourceDeleted(k cluster.Kind, r remediationObj) {
	c.deletes[k] = append(c.deletes[k], unseenDelete{remediationObj: r, deleted: time.Now(), shownTo: map[string]bool{}})
}

// Shown drops the creates that a client's list or watch showed it, and
// notes the deletes it showed (the Shown hook).
func (c *Checker) Shown(client string, gvr schema.GroupVersionResource, uids []types.UID, listed bool) {
	k, ok := cluster.KindOf(gvr)
	if !ok {
		return
	}
	c.unseen[k] = slices.DeleteFunc(c.unseen[k], func(u unseenCreate) bool {
		return u.client == client && slices.Contains(uids, u.obj.GetUID())
	})
	for _, d := range c.deletes[k] {
		if listed || slices.Contains(uids, d.obj.GetUID()) {
			d.shownTo[client] = true
		}
	}
}

// deletesUnseenByLeader returns a kind's resources deleted since the
// leading replica started that neither its watch nor a list showed it
// deleted.
func (c *Checker) deletesUnseenByLeader(k cluster.Kind) []remediationObj {
	var held []remediationObj
	leader := c.cfg.Leader()
	for _, d := range c.deletes[k] {
		if leader != "" && !d.shownTo[leader] && d.deleted.After(c.leaderStarted) {
			held = append(held, d.remediationObj)
		}
	}
	return held
}

// unseenByLeader returns a kind's creates that the leading replica's
// informer has not shown; a replica that stopped leading exits, and its
// creates hold nothing.
func (c *Checker) unseenByLeader(k cluster.Kind) []remediationObj {
	var creates []remediationObj
	leader := c.cfg.Leader()
	for _, u := range c.unseen[k] {
		if leader != "" && u.client == leader {
			creates = append(creates, u.remediationObj)
		}
	}
	return creates
}

// unlookable returns a kind's creates that the controller cannot look up
// while it may not read the kind: those whose answer was lost, and those
// its informer has not shown.
func (c *Checker) unlookable(k cluster.Kind) []remediationObj {
	return append(slices.Clone(c.uncertain[k]), c.unseenByLeader(k)...)
}
