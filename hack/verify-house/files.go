package main

import (
	"fmt"
	"slices"
	"strings"
)

// A side is files of one tier that go together: one side of a package's
// diagram, or a room.
type side struct {
	name  string
	files []string
}

// A fileTable places the files of one package in tiers, topmost first, as
// its diagram in docs/architecture.md does: a file names the declarations
// of its own tier and the tiers below alone, no two files name each
// other's, even through others, and the sides apart name nothing of each
// other. A file that declares nothing (doc.go) stands in no tier.
type fileTable struct {
	tiers [][]side
	// apart are the sides of which neither names anything of the other.
	apart [][2]string
}

// fileTables are the packages whose files hack/verify-house places.
var fileTables = map[string]fileTable{
	// docs/architecture.md, "Inside the room the files read bottom-up".
	"pkg/health": {tiers: [][]side{
		{
			{"from the plan: the status, the words", []string{"forecast.go", "leftout.go", "status.go", "history.go", "history_edit.go", "explain.go", "waits.go", "status_entries.go", "recheck.go"}},
			{"the evaluation: the plan made", []string{"evaluate.go", "escalation.go", "gates.go", "recovery.go", "lease.go", "storm.go", "claims.go", "controlplane.go", "oldremediations.go", "evaluation.go"}},
		},
		{{"the plan", []string{"plan.go"}}},
		{{"the ground", []string{
			"incident.go", "incident_record.go", "incident_end.go", "status_bounds.go",
			"records.go", "spec.go", "events.go", "input.go", "outcome.go", "overlap.go",
			"actions.go", "steps.go", "budget.go", "conditions.go", "quiet.go", "nodelease.go",
		}}},
	}},
	// docs/architecture.md, "The rooms of a remediation".
	"pkg/remediation": {
		tiers: [][]side{
			{{"New", []string{"rooms.go"}}},
			{
				{"the Observer", []string{"observer.go", "watch.go", "read.go", "left.go", "leftovers.go"}},
				{"the Writer", []string{"writer.go", "writes.go", "access.go", "lapsed.go", "client.go", "generate.go"}},
			},
			{{"shared below both", []string{"watched.go", "metadataonly.go"}}},
		},
		apart: [][2]string{{"the Observer", "the Writer"}},
	},
}

// place is a file's tier and side in a table; -1 for a file of none.
func (t fileTable) place(file string) (int, string) {
	for i, tier := range t.tiers {
		for _, s := range tier {
			if slices.Contains(s.files, file) {
				return i, s.name
			}
		}
	}
	return -1, ""
}

// isApart tells whether two sides name nothing of each other.
func (t fileTable) isApart(a, b string) bool {
	return slices.Contains(t.apart, [2]string{a, b}) || slices.Contains(t.apart, [2]string{b, a})
}

// checkFileTable says which files of a package stand in no tier of its
// table, which the table lists but the package has not, and which uses go
// up a tier, between sides apart, or round a cycle. files are the
// package's files that declare something.
func checkFileTable(pkg string, t fileTable, files []string, uses []use) []string {
	var problems []string
	for _, f := range files {
		if tier, _ := t.place(f); tier < 0 {
			problems = append(problems, fmt.Sprintf("%s/%s: in no tier of hack/verify-house's fileTables; add it where docs/architecture.md's diagram puts it", pkg, f))
		}
	}
	for _, tier := range t.tiers {
		for _, s := range tier {
			for _, f := range s.files {
				if !slices.Contains(files, f) {
					problems = append(problems, fmt.Sprintf("%s/%s: in hack/verify-house's fileTables, but the package has no such file that declares anything", pkg, f))
				}
			}
		}
	}
	for _, u := range uses {
		from, fromSide := t.place(u.from)
		to, toSide := t.place(u.to)
		switch {
		case from < 0 || to < 0:
		case to < from:
			problems = append(problems, fmt.Sprintf("%s/%s names %s of %s, a file of a tier above its own: move %s down, or the file to its tier", pkg, u.from, u.decl, u.to, u.decl))
		case t.isApart(fromSide, toSide):
			problems = append(problems, fmt.Sprintf("%s/%s (%s) names %s of %s (%s), a side it must not see: move %s below both", pkg, u.from, fromSide, u.decl, u.to, toSide, u.decl))
		}
	}
	for _, cycle := range cycles(uses) {
		var said []string
		for _, u := range cycle {
			said = append(said, fmt.Sprintf("%s names %s of %s", u.from, u.decl, u.to))
		}
		problems = append(problems, fmt.Sprintf("%s: files that name each other, a cycle: %s; move a declaration so that one names nothing of the other", pkg, strings.Join(said, ", ")))
	}
	return problems
}

// cycles finds the strongly connected components of more than one file
// in the graph of uses (Tarjan's algorithm), and returns for each the
// shortest cycle through its first file, as the uses that make it.
func cycles(uses []use) [][]use {
	next := map[string][]use{}
	var nodes []string
	for _, u := range uses {
		for _, f := range []string{u.from, u.to} {
			if _, ok := next[f]; !ok {
				next[f] = nil
				nodes = append(nodes, f)
			}
		}
		next[u.from] = append(next[u.from], u)
	}
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var found [][]use
	var visit func(f string)
	visit = func(f string) {
		index[f], low[f] = len(index), len(index)
		stack = append(stack, f)
		onStack[f] = true
		for _, u := range next[f] {
			if _, seen := index[u.to]; !seen {
				visit(u.to)
				low[f] = min(low[f], low[u.to])
			} else if onStack[u.to] {
				low[f] = min(low[f], index[u.to])
			}
		}
		if low[f] != index[f] {
			return
		}
		var component []string
		for {
			g := stack[len(stack)-1]
			stack, onStack[g] = stack[:len(stack)-1], false
			component = append(component, g)
			if g == f {
				break
			}
		}
		if len(component) > 1 {
			slices.Sort(component)
			found = append(found, shortestCycle(component, next))
		}
	}
	for _, f := range nodes {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	slices.SortFunc(found, func(a, b []use) int { return strings.Compare(a[0].from, b[0].from) })
	return found
}

// shortestCycle is the shortest cycle from a component's first file back
// to it, within the component (breadth first).
func shortestCycle(component []string, next map[string][]use) []use {
	start := component[0]
	via := map[string]use{}
	queue := []string{start}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, u := range next[f] {
			if !slices.Contains(component, u.to) {
				continue
			}
			if u.to == start {
				cycle := []use{u}
				for g := f; g != start; g = via[g].from {
					cycle = append(cycle, via[g])
				}
				slices.Reverse(cycle)
				return cycle
			}
			if _, ok := via[u.to]; !ok {
				via[u.to] = u
				queue = append(queue, u.to)
			}
		}
	}
	return nil
}
