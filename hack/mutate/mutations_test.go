package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

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

// TestEveryMutationBuilds builds the package of each mutated file with the
// mutation in place, so that a mutation the code outgrew fails here, not
// when make mutate reaches it.
func TestEveryMutationBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every mutated package")
	}
	t.Chdir("../..")
	work := t.TempDir()
	for _, m := range mutations {
		source, err := m.apply()
		if err != nil {
			continue
		}
		mutated := filepath.Join(work, m.Name+".go")
		if err := os.WriteFile(mutated, source, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := filepath.Abs(m.File)
		if err != nil {
			t.Fatal(err)
		}
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {file: mutated}})
		if err != nil {
			t.Fatal(err)
		}
		overlayFile := filepath.Join(work, m.Name+".json")
		if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("go", "build", "-overlay", overlayFile, "./"+filepath.Dir(m.File)).CombinedOutput(); err != nil {
			t.Errorf("mutation %s does not build: %v\n%s", m.Name, err, out)
		}
	}
}
