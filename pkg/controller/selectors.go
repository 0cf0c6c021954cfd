package controller

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// selectorCache keeps the parsed selectors of all NodeHealthChecks, rebuilt
// when one changes, so that node events and syncs do not parse selectors.
type selectorCache struct {
	nhcs    nhclisters.NodeHealthCheckLister
	mu      sync.Mutex
	version map[types.UID]int64
	current selectors
}

type selectors struct {
	entries []selectorEntry
	// keys are the label keys any selector uses.
	keys map[string]bool
	// peers are every NodeHealthCheck, readable or not, by UID, for the
	// overlap rule.
	peers map[types.UID]health.Peer
	// mayShare are, by UID, the other entries whose selector is not
	// disjoint from the NodeHealthCheck's.
	mayShare map[types.UID][]health.SelectingPeer
}

type selectorEntry struct {
	name     string
	selector labels.Selector
	peer     health.Peer
	// conditions are its unhealthy conditions, for the overlap rule.
	conditions []v1alpha1.UnhealthyCondition
}

func newSelectorCache(nhcs nhclisters.NodeHealthCheckLister) *selectorCache {
	return &selectorCache{nhcs: nhcs, version: map[types.UID]int64{}}
}

// get returns the selectors of the NodeHealthChecks the cache has now.
func (s *selectorCache) get() selectors {
	nhcs, _ := s.nhcs.List(labels.Everything())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unchanged(nhcs) {
		return s.current
	}
	version := make(map[types.UID]int64, len(nhcs))
	current := selectors{keys: map[string]bool{}, peers: make(map[types.UID]health.Peer, len(nhcs))}
	for _, nhc := range nhcs {
		version[nhc.UID] = nhc.Generation
		peer := health.Peer{Name: nhc.Name, UID: nhc.UID, Created: nhc.CreationTimestamp.Time}
		current.peers[nhc.UID] = peer
		if _, bad := unreadable(nhc); bad {
			// Its selector is unknown, not empty: it selects no node.
			continue
		}
		selector, problem := health.ParseSelector(&nhc.Spec.Selector)
		if problem != nil {
			continue
		}
		current.entries = append(current.entries, selectorEntry{name: nhc.Name, selector: selector, peer: peer, conditions: nhc.Spec.UnhealthyConditions})
		for key := range nhc.Spec.Selector.MatchLabels {
			current.keys[key] = true
		}
		for _, e := range nhc.Spec.Selector.MatchExpressions {
			current.keys[e.Key] = true
		}
	}
	current.mayShare = mayShare(current.entries)
	s.version, s.current = version, current
	return current
}

// mayShare pairs the entries whose selectors are not disjoint, once per
// change of a selector rather than on every sync.
func mayShare(entries []selectorEntry) map[types.UID][]health.SelectingPeer {
	pairs := make(map[types.UID][]health.SelectingPeer, len(entries))
	for i := range entries {
		for j := range entries {
			if i != j && !disjoint(entries[i].selector, entries[j].selector) {
				pairs[entries[i].peer.UID] = append(pairs[entries[i].peer.UID], health.SelectingPeer{Peer: entries[j].peer, Selector: entries[j].selector, Conditions: entries[j].conditions})
			}
		}
	}
	return pairs
}

// peersOf returns the NodeHealthChecks whose selector may match nodes that
// a NodeHealthCheck selects: every other one when its own selector is not
// known (it is disabled, and selects the nodes under remediation).
func (s selectors) peersOf(nhc *v1alpha1.NodeHealthCheck) []health.SelectingPeer {
	if slices.ContainsFunc(s.entries, func(e selectorEntry) bool { return e.peer.UID == nhc.UID }) {
		return s.mayShare[nhc.UID]
	}
	var peers []health.SelectingPeer
	for _, e := range s.entries {
		if e.peer.UID != nhc.UID {
			peers = append(peers, health.SelectingPeer{Peer: e.peer, Selector: e.selector, Conditions: e.conditions})
		}
	}
	return peers
}

func (s *selectorCache) unchanged(nhcs []*v1alpha1.NodeHealthCheck) bool {
	if len(nhcs) != len(s.version) {
		return false
	}
	for _, nhc := range nhcs {
		if generation, ok := s.version[nhc.UID]; !ok || generation != nhc.Generation {
			return false
		}
	}
	return true
}
