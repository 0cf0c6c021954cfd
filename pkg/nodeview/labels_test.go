package nodeview

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

// Map returns the labels as a new map, nil without any.
func (l Labels) Map() map[string]string {
	if l.nodeLabels == nil {
		return nil
	}
	m := make(map[string]string, len(l.list.pairs))
	for _, p := range l.list.pairs {
		m[p.key] = l.Get(p.key)
	}
	return m
}

func poolLabels(name string) map[string]string {
	return map[string]string{"kubernetes.io/hostname": name, "pool": "general", "topology.kubernetes.io/zone": "a", "node-role.kubernetes.io/worker": ""}
}

func TestLabelsReadAsTheirMap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{
		{"none", nil},
		{"a pool's node, its hostname its name", poolLabels("worker-1")},
		{"a value equal to the name under another key", map[string]string{"a": "worker-1", "b": "worker-1", "c": "worker-2"}},
		{"empty values", map[string]string{"": "", "x": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := LabelsOf("worker-1", tc.labels, nil)
			if len(tc.labels) == 0 {
				assert.Nil(t, l.Map())
			} else {
				assert.Equal(t, tc.labels, l.Map())
			}
			for key, value := range tc.labels {
				got, ok := l.Lookup(key)
				assert.True(t, ok, key)
				assert.Equal(t, value, got, key)
			}
			_, ok := l.Lookup("missing")
			assert.False(t, ok)
			assert.False(t, l.Has("missing"))
			assert.Empty(t, l.Get("missing"))
		})
	}
}

func TestPoolNodesShareOneList(t *testing.T) {
	table := NewLabelTable()
	first, second := LabelsOf("worker-1", poolLabels("worker-1"), table), LabelsOf("worker-2", poolLabels("worker-2"), table)
	assert.Same(t, first.list, second.list, "the hostname is a reference to the name: one list for the pool")
	assert.False(t, first.Equal(second), "yet the hostnames differ")
	assert.Equal(t, "worker-2", second.Get("kubernetes.io/hostname"))

	other := LabelsOf("worker-2", map[string]string{"kubernetes.io/hostname": "worker-2", "pool": "infra"}, table)
	assert.False(t, second.Equal(other))
	assert.True(t, second.Equal(LabelsOf("worker-2", poolLabels("worker-2"), table)), "equal labels of one node are equal")
	assert.True(t, Labels{}.Equal(LabelsOf("worker-3", nil, table)), "no labels are no labels")
	assert.False(t, Labels{}.Equal(second))
}

func TestLabelsOfTwoTables(t *testing.T) {
	shared, alone := LabelsOf("worker-1", poolLabels("worker-1"), NewLabelTable()), LabelsOf("worker-1", poolLabels("worker-1"), nil)
	assert.NotSame(t, shared.list, alone.list)
	assert.True(t, shared.Equal(alone), "equal labels are equal, whichever table holds them")
	assert.True(t, alone.Equal(shared))
	assert.False(t, shared.Equal(LabelsOf("worker-2", poolLabels("worker-2"), nil)), "the hostnames differ")
	assert.False(t, shared.Equal(LabelsOf("worker-1", map[string]string{"pool": "general"}, nil)))
}

func TestSelectorsReadLabels(t *testing.T) {
	selector, err := labels.Parse("pool=general,kubernetes.io/hostname=worker-1,!node-role.kubernetes.io/control-plane")
	require.NoError(t, err)
	assert.True(t, selector.Matches(LabelsOf("worker-1", poolLabels("worker-1"), nil)))
	assert.False(t, selector.Matches(LabelsOf("worker-2", poolLabels("worker-2"), nil)))
	assert.False(t, selector.Matches(Labels{}))
	assert.True(t, labels.Everything().Matches(Labels{}))
}

func TestLabelBuilder(t *testing.T) {
	var b LabelBuilder
	b.Reset("worker-1")
	b.Add([]byte("a"), []byte("1"))
	b.Add([]byte("b"), []byte("worker-1"))
	built, ok := b.Labels(Labels{}, nil)
	require.True(t, ok)
	assert.Equal(t, map[string]string{"a": "1", "b": "worker-1"}, built.Map())

	b.Reset("worker-1")
	b.Add([]byte("a"), []byte("1"))
	b.Add([]byte("b"), []byte("worker-1"))
	again, ok := b.Labels(built, nil)
	require.True(t, ok)
	assert.Same(t, built.nodeLabels, again.nodeLabels, "unchanged labels are the previous ones, allocating nothing")

	for _, keys := range [][]string{{"b", "a"}, {"a", "a"}} {
		b.Reset("worker-1")
		for _, key := range keys {
			b.Add([]byte(key), nil)
		}
		_, ok = b.Labels(built, nil)
		assert.False(t, ok, "keys %v are not ascending: the caller goes through a map", keys)
	}
}

func TestTheTableForgetsListsNoNodeHolds(t *testing.T) {
	table := NewLabelTable()
	holding := func(key string) (lists int) {
		table.mu.Lock()
		defer table.mu.Unlock()
		for encoded := range table.lists {
			if strings.Contains(encoded, key) {
				lists++
			}
		}
		return lists
	}
	held := LabelsOf("n", map[string]string{"held": "yes"}, table)
	for i := range 100 {
		LabelsOf("n", map[string]string{"dropped": fmt.Sprint(i)}, table)
	}
	for range 20 {
		runtime.GC()
		if holding("dropped") == 0 {
			break
		}
	}
	assert.Zero(t, holding("dropped"), "no node holds these lists")
	assert.Equal(t, 1, holding("held"), "a node holds this one")
	assert.Equal(t, "yes", held.Get("held"))
	runtime.KeepAlive(held)
}

func FuzzLabels(f *testing.F) {
	f.Add("worker-1", "kubernetes.io/hostname", "worker-1", "pool", "general")
	f.Add("", "", "", "x", "")
	f.Fuzz(func(t *testing.T, name, k1, v1, k2, v2 string) {
		m := map[string]string{k1: v1, k2: v2}
		l := LabelsOf(name, m, nil)
		assert.Equal(t, m, l.Map())
		assert.True(t, l.Equal(LabelsOf(name, m, NewLabelTable())))
		for key, value := range m {
			assert.Equal(t, value, l.Get(key))
		}
	})
}
