package nodecache

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestHandlersHearEveryEventInOrder: the informer calls its handlers itself,
// in the order they were added, and takes none once it runs.
func TestHandlersHearEveryEventInOrder(t *testing.T) {
	i, err := NewInformer(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	var heard []string
	handler := func(name string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				heard = append(heard, name+" add")
				assert.True(t, initial)
			},
			UpdateFunc: func(any, any) { heard = append(heard, name+" update") },
			DeleteFunc: func(any) { heard = append(heard, name+" delete") },
		}
	}
	require.NoError(t, i.AddEventHandler(handler("first")))
	require.NoError(t, i.AddEventHandler(handler("second")))
	d := dispatcher{i}
	d.OnAdd(nil, true)
	d.OnUpdate(nil, nil)
	d.OnDelete(nil)
	assert.Equal(t, []string{"first add", "second add", "first update", "second update", "first delete", "second delete"}, heard)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	i.Run(ctx)
	assert.Error(t, i.AddEventHandler(handler("late")))
}
