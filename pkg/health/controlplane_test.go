package health

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One control-plane node at a time: a node may start only while no other
// control-plane node is under remediation, whether it is itself or not.
func TestAnotherControlPlaneNode(t *testing.T) {
	for _, tt := range []struct {
		name string
		busy []string
		want bool
	}{
		{"none busy", nil, false},
		{"itself alone", []string{"cp-0"}, false},
		{"another", []string{"cp-1"}, true},
		{"itself and another", []string{"cp-0", "cp-1"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AnotherControlPlaneNode(slices.Values(tt.busy), "cp-0"))
		})
	}
}
