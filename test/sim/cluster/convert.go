package cluster

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FromUnstructured converts a stored object into a typed one.
func FromUnstructured(u *unstructured.Unstructured, into any) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		panic(err)
	}
}

// Earliest is the earliest of instants; zero ones are none.
func Earliest(times ...time.Time) time.Time {
	var e time.Time
	for _, t := range times {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}
