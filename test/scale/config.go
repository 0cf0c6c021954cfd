package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// config is one run's parameters; every one is a flag. Durations are in
// nanoseconds in the JSON.
type config struct {
	Nodes int `json:"nodes"`
	NHCs  int `json:"nodeHealthChecks"`
	// HeartbeatRate is node status updates a second, LeaseRate node lease
	// renewals a second (in kube-node-lease, which the controller does not
	// watch).
	HeartbeatRate float64 `json:"heartbeatRate"`
	LeaseRate     float64 `json:"leaseRate"`
	// HeartbeatsThroughout keeps the heartbeats and lease renewals going
	// from the quiet phase to the end, as kubelets do while nodes fail;
	// false sends them in the quiet phase alone, so that the trickle and
	// the storm meet an idle API server.
	HeartbeatsThroughout bool          `json:"heartbeatsThroughout"`
	Quiet                time.Duration `json:"quietNs"`
	// Trickle nodes fail one every TrickleInterval; 0 is
	// defaultTrickle, or every node of a smaller cluster.
	Trickle         int           `json:"trickle"`
	TrickleInterval time.Duration `json:"trickleIntervalNs"`
	// TrickleRecovery is how long after its deadline a trickle node
	// recovers, once its remediation resource exists: a remediation takes
	// time, so incidents overlap, as an operator's cluster has them. 0
	// recovers it as soon as the resource exists.
	TrickleRecovery time.Duration `json:"trickleRecoveryNs"`
	// Storm nodes of the first NodeHealthCheck fail at once and recover
	// StormHold later; 0 is 30% of its nodes.
	Storm     int           `json:"storm"`
	StormHold time.Duration `json:"stormHoldNs"`
	// ConditionDuration is how long Ready=False or Unknown must hold.
	ConditionDuration time.Duration `json:"conditionDurationNs"`
	MinHealthy        string        `json:"minHealthy"`
	// Settle is added to each phase so that the work its last change caused
	// is counted in it.
	Settle time.Duration `json:"settleNs"`
	// WaitTimeout bounds every wait for the controller.
	WaitTimeout time.Duration `json:"waitTimeoutNs"`
	// Writers are the benchmark's parallel node writers.
	Writers         int    `json:"writers"`
	ControllerFlags string `json:"controllerFlags"`
	// ControllerBinary, when set, is the controller to measure instead of
	// the one built from the tree: another commit's, for a bisection.
	ControllerBinary string `json:"controllerBinary,omitempty"`
	// Profile runs the controller with --profiling and saves its profiles.
	Profile bool   `json:"profile"`
	Output  string `json:"-"`
	// Trend is the file a completed run's figures are appended to.
	Trend string `json:"-"`
}

// defaultTrickle is the trickle an operator's bench measured with: 100
// nodes failing over a minute (one every 600 ms), whatever the cluster's
// size, spread over its pools.
const defaultTrickle = 100

// heartbeatInterval is how often, by default, each node's status is
// written and its lease renewed: what an operator's bench of a real
// cluster measured with, every kubelet of 10,000 writing both.
const heartbeatInterval = 120 * time.Second

func parseConfig(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.IntVar(&c.Nodes, "nodes", 10000, "nodes in the cluster")
	fs.IntVar(&c.NHCs, "nhcs", 10, "NodeHealthChecks, each selecting nodes/nhcs of the nodes (disjoint)")
	fs.Float64Var(&c.HeartbeatRate, "heartbeat-rate", 0, "node status updates a second, round-robin over the nodes; 0 is one per node every heartbeatInterval")
	fs.Float64Var(&c.LeaseRate, "lease-rate", -1, "node lease renewals a second in kube-node-lease, round-robin over the nodes; 0 for none, -1 one per node every heartbeatInterval")
	fs.BoolVar(&c.HeartbeatsThroughout, "heartbeats-throughout", true, "keep the heartbeats and lease renewals going through the trickle and the storm; false for the quiet phase alone")
	fs.DurationVar(&c.Quiet, "quiet", 60*time.Second, "length of the quiet phase (heartbeats and lease renewals only)")
	fs.IntVar(&c.Trickle, "trickle", 0, fmt.Sprintf("nodes that fail one by one in the trickle phase; 0 is %d (at most --nodes)", defaultTrickle))
	fs.DurationVar(&c.TrickleInterval, "trickle-interval", 600*time.Millisecond, "time between two failures of the trickle phase")
	fs.DurationVar(&c.TrickleRecovery, "trickle-recovery", 20*time.Second, "how long after its deadline a trickle node recovers, once its remediation resource exists (incidents overlap, as remediations take time); 0 recovers it as soon as the resource exists")
	fs.IntVar(&c.Storm, "storm", 0, "nodes of the first NodeHealthCheck that fail at once in the storm phase; 0 is 30% of its nodes")
	fs.DurationVar(&c.StormHold, "storm-hold", time.Minute, "how long the storm's nodes stay failed before they recover together")
	fs.DurationVar(&c.ConditionDuration, "condition-duration", 10*time.Second, "duration of the NodeHealthChecks' unhealthy conditions")
	fs.StringVar(&c.MinHealthy, "min-healthy", "60%", "minHealthy of every NodeHealthCheck")
	fs.DurationVar(&c.Settle, "settle", 3*time.Second, "time added to each phase for the work its last change caused")
	fs.DurationVar(&c.WaitTimeout, "wait-timeout", 10*time.Minute, "longest wait for the controller in any phase")
	fs.IntVar(&c.Writers, "writers", 32, "parallel node writers of the benchmark")
	fs.StringVar(&c.ControllerFlags, "controller-flags", "", "extra flags for nhc-controller, space separated")
	fs.StringVar(&c.ControllerBinary, "controller-binary", "", "measure this nhc-controller binary instead of the tree's (another commit's, built with go build ./cmd/nhc-controller); the results name it instead of the commit")
	fs.BoolVar(&c.Profile, "profile", false, "run the controller with --profiling and save a CPU profile of each phase of known length and a heap profile at each phase's end, next to the results")
	fs.StringVar(&c.Output, "output", filepath.Join(controlplane.RepoRoot(), "_output", "scale"), "directory of the JSON results and the controller log")
	fs.StringVar(&c.Trend, "trend", defaultTrend(), "file a completed run's headline figures are appended to (make scale-compare reads it); empty for none")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.HeartbeatRate == 0 {
		c.HeartbeatRate = float64(c.Nodes) / heartbeatInterval.Seconds()
	}
	if c.LeaseRate < 0 {
		c.LeaseRate = float64(c.Nodes) / heartbeatInterval.Seconds()
	}
	if c.Trickle == 0 {
		c.Trickle = min(defaultTrickle, c.Nodes)
	}
	if c.Storm == 0 {
		c.Storm = max(groupSize(c, 0)*30/100, 1)
	}
	return c, c.validate()
}

func defaultTrend() string {
	return filepath.Join(controlplane.RepoRoot(), "test", "scale", "trend.jsonl")
}

func (c *config) validate() error {
	switch {
	case c.Nodes < 1 || c.NHCs < 1 || c.NHCs > c.Nodes:
		return fmt.Errorf("need 1 <= --nhcs <= --nodes")
	case c.HeartbeatRate <= 0 || c.HeartbeatRate > float64(c.Nodes):
		// A node's heartbeat time has one-second precision: a second one
		// within the same second would change nothing.
		return fmt.Errorf("--heartbeat-rate must be positive and at most one update per node a second (%d)", c.Nodes)
	case c.LeaseRate < 0 || c.LeaseRate > float64(c.Nodes):
		return fmt.Errorf("--lease-rate must be at least 0 and at most one renewal per node a second (%d)", c.Nodes)
	case c.Trickle > c.Nodes || c.Storm > groupSize(c, 0):
		return fmt.Errorf("--trickle must be at most --nodes, --storm at most the first NodeHealthCheck's %d nodes", groupSize(c, 0))
	case c.Writers < 1:
		return fmt.Errorf("--writers must be at least 1")
	}
	if _, err := allowedUnhealthy(c.MinHealthy, 1); err != nil {
		return err
	}
	return nil
}

func (c *config) controllerFlags() []string {
	flags := strings.Fields(c.ControllerFlags)
	if c.Profile {
		flags = append(flags, "--profiling")
	}
	return flags
}

// allowedUnhealthy is how many of observed nodes may be unhealthy with new
// remediations still starting: observed - minHealthy, a percentage rounded
// up as the controller rounds it.
func allowedUnhealthy(minHealthy string, observed int) (int, error) {
	value := intstr.Parse(minHealthy)
	healthy, err := intstr.GetScaledValueFromIntOrPercent(&value, observed, true)
	if err != nil || healthy < 0 {
		return 0, fmt.Errorf("--min-healthy must be a number or a percentage: %q", minHealthy)
	}
	return max(observed-healthy, 0), nil
}
