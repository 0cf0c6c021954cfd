package main

import "testing"

// TestEveryMutationStillApplies fails as soon as the code a mutation edits
// moves on, in the unit tests, not minutes into make mutate.
func TestEveryMutationStillApplies(t *testing.T) {
	t.Chdir("../..")
	names := map[string]bool{}
	for _, m := range mutations {
		if names[m.Name] {
			t.Errorf("mutation %s: the name is used twice", m.Name)
		}
		names[m.Name] = true
		if _, err := m.apply(); err != nil {
			t.Errorf("mutation %s: %v", m.Name, err)
		}
	}
}
