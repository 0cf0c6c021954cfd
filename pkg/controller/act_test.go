package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// fortyWorkers names worker-00 to worker-39.
func fortyWorkers() []string {
	var nodes []string
	for i := range 40 {
		nodes = append(nodes, fmt.Sprintf("worker-%02d", i))
	}
	return nodes
}

func TestCreationsGoOutTogetherAndAreReportedInPlanOrder(t *testing.T) {
	f := newSyncFixture(t, workersNHC())
	nodes := fortyWorkers()
	var creations []health.Creation
	for _, node := range nodes {
		creations = append(creations, health.Creation{Node: node, Template: snrTemplate})
	}
	check := recheck{
		atAPIServer: func(_ context.Context, c health.Creation) (string, error) {
			switch c.Node {
			case "worker-09":
				return "the node is healthy", nil
			case "worker-11":
				return "", assert.AnError
			}
			return "", nil
		},
		inCaches: func(c health.Creation) string {
			if c.Node == "worker-07" {
				return "the node recovered"
			}
			return ""
		},
	}
	var out health.Outcome
	f.c.actor.creates.Send(context.Background(), workersNHC(), creations, &remediation.Watched{}, check, &out)
	require.Len(t, out.Errors, 1, "the check that could not be made")
	assert.ErrorIs(t, out.Errors[0], assert.AnError)
	var created []string
	for _, c := range out.Created {
		created = append(created, c.Node)
	}
	assert.Equal(t, slices.Concat(nodes[:7], nodes[8:9], nodes[10:11], nodes[12:]), created, "in plan order, but for worker-07, 09 and 11")
	assert.Equal(t, []health.Blocked{{Node: "worker-07", Message: "the node recovered"}}, out.Withdrawn)
	assert.Equal(t, []health.Blocked{{Node: "worker-09", Message: "the node is healthy"}}, out.Unconfirmed, "withdrawn by the API server's node")
}

// failingDeletes fails the deletes of one node.
type failingDeletes struct {
	*fakeRemediations
	node string
}

func (f failingDeletes) Delete(_ context.Context, _ string, _ *remediation.Watched, del health.Deletion) (bool, error) {
	if del.Node == f.node {
		return false, assert.AnError
	}
	return true, nil
}

func TestDeletionsGoOutTogetherAndAreReportedInPlanOrder(t *testing.T) {
	f := newSyncFixture(t, workersNHC())
	f.c.api.writer = failingDeletes{fakeRemediations: f.remediations, node: "worker-07"}
	nodes := fortyWorkers()
	var deletions []health.Deletion
	for _, node := range nodes {
		deletions = append(deletions, health.Deletion{Node: node, Resource: corev1.ObjectReference{Kind: "SelfNodeRemediation", Name: node}})
	}
	var out health.Outcome
	f.c.actor.deleteAll(context.Background(), "workers", deletions, &remediation.Watched{}, &out)
	require.Len(t, out.Errors, 1)
	assert.Contains(t, out.Errors[0].Error(), "worker-07")
	var deleted []string
	for _, d := range out.Deleted {
		deleted = append(deleted, d.Node)
	}
	assert.Equal(t, slices.Delete(slices.Clone(nodes), 7, 8), deleted, "in plan order, but for worker-07")
}

// TestAConfirmationStaysWhileItsDeletesFail: the manual confirmation is
// removed after the deletes it released went through, so that a failed
// delete is retried on the same confirmation.
func TestAConfirmationStaysWhileItsDeletesFail(t *testing.T) {
	first := health.Deletion{Node: "back", Resource: corev1.ObjectReference{Name: "back-1"}}
	second := health.Deletion{Node: "back", Resource: corev1.ObjectReference{Name: "back-2"}}
	other := health.Deletion{Node: "other", Resource: corev1.ObjectReference{Name: "other"}}
	for _, tc := range []struct {
		name    string
		deleted []health.Deletion
		failed  bool
	}{
		{"all deleted", []health.Deletion{first, second, other}, false},
		{"one failed", []health.Deletion{first, other}, true},
		{"none deleted", nil, true},
	} {
		assert.Equal(t, tc.failed, deletesFailed("back", []health.Deletion{first, second, other}, tc.deleted), tc.name)
	}
	assert.False(t, deletesFailed("back", nil, nil), "a confirmation with nothing left to delete goes")
}
