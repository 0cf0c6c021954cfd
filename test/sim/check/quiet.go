package check

// InvQuietLeftOut: a sync decides from the nodes that show something,
// leaving the quiet ones out (pkg/health/quiet.go), and its decision is
// the one made from every node it selects: the plan, but for the quiet
// nodes' verdicts, and the status (health.CompareLeftOut, which every sync
// of a simulated replica runs).
const InvQuietLeftOut = "quiet-nodes-change-no-decision"

// QuietLeftOut hears of a sync whose decision leaving its quiet nodes out
// changed.
func (c *Checker) QuietLeftOut(nhc string, err error) {
	c.fail(InvQuietLeftOut, "NodeHealthCheck %s: %v", nhc, err)
}
