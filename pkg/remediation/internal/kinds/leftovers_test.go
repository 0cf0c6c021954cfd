package kinds

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A kind looked at for leftovers that may not be listed is dropped, not
// held back for a retry: a NodeHealthCheck that uses it once its role is
// granted watches it at once.
func TestALookedAtKindThatFailsIsWatchedAtOnceWhenUsed(t *testing.T) {
	f := newRoleFixture(t)
	f.denied.Store(true)
	f.informers.Look([]schema.GroupVersionResource{testGVR})
	require.Eventually(t, func() bool { return len(f.informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond, "stopped at its first 403")
	assert.Empty(t, f.informers.UnknownRemediations())

	f.denied.Store(false)
	f.informers.Use("granted", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return f.informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
}
