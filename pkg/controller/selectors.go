package controller

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
)

// selectorCache keeps the parsed selectors of all NodeHealthChecks, rebuilt
// when one changes, so that node events do not parse selectors.
type selectorCache struct {
	mu      sync.Mutex
	version map[types.UID]int64
	current selectors
}

type selectors struct {
	entries []selectorEntry
	// keys are the label keys any selector uses.
	keys map[string]bool
}

type selectorEntry struct {
	name     string
	selector labels.Selector
}

func newSelectorCache() *selectorCache {
	return &selectorCache{version: map[types.UID]int64{}}
}

func (s *selectorCache) get(lister nhclisters.NodeHealthCheckLister) selectors {
	nhcs, _ := lister.List(labels.Everything())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unchanged(nhcs) {
		return s.current
	}
	version := make(map[types.UID]int64, len(nhcs))
	current := selectors{keys: map[string]bool{}}
	for _, nhc := range nhcs {
		version[nhc.UID] = nhc.Generation
		if _, bad := unreadable(nhc); bad {
			// Its selector is unknown, not empty: it selects no node.
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(&nhc.Spec.Selector)
		if err != nil {
			continue
		}
		current.entries = append(current.entries, selectorEntry{name: nhc.Name, selector: selector})
		for key := range nhc.Spec.Selector.MatchLabels {
			current.keys[key] = true
		}
		for _, e := range nhc.Spec.Selector.MatchExpressions {
			current.keys[e.Key] = true
		}
	}
	s.version, s.current = version, current
	return current
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
