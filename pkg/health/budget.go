package health

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// How many nodes may be under remediation at once: the budget (minHealthy
// or maxUnhealthy), and storm recovery, which holds back new remediations
// while the budget is spent. Both are read from the spec; the storm's
// state is kept in storm.go.

// budgetRule is minHealthy or maxUnhealthy, parsed once.
//
// minHealthy is used as is; maxUnhealthy becomes observed-maxUnhealthy, and a
// maxUnhealthy above the number of selected nodes means no limit. Percentages
// of the selected nodes round up, as upstream does, which makes minHealthy
// stricter and maxUnhealthy more permissive. A string of digits such as "3"
// is an absolute number.
type budgetRule struct {
	// maxUnhealthy is true when the value limits unhealthy nodes.
	maxUnhealthy bool
	// percent is true when value is a percentage of the selected nodes.
	percent bool
	value   int
}

// parseBudget parses minHealthy or maxUnhealthy.
func parseBudget(spec *v1alpha1.NodeHealthCheckSpec) (*budgetRule, error) {
	switch {
	case spec.MinHealthy != nil && spec.MaxUnhealthy != nil:
		return nil, fmt.Errorf("minHealthy and maxUnhealthy are mutually exclusive: set only one of them")
	case spec.MinHealthy != nil:
		return parseScaled("minHealthy", spec.MinHealthy, false)
	case spec.MaxUnhealthy != nil:
		return parseScaled("maxUnhealthy", spec.MaxUnhealthy, true)
	default:
		return nil, fmt.Errorf("set one of minHealthy or maxUnhealthy")
	}
}

// parseScaled parses an integer, a string of digits, or a percentage.
func parseScaled(field string, value *intstr.IntOrString, maxUnhealthy bool) (*budgetRule, error) {
	rule := &budgetRule{maxUnhealthy: maxUnhealthy}
	if value.Type == intstr.Int {
		if value.IntVal < 0 {
			return nil, fmt.Errorf("%s must not be negative: %d", field, value.IntVal)
		}
		rule.value = int(value.IntVal)
		return rule, nil
	}
	s := value.StrVal
	if digits, isPercent := strings.CutSuffix(s, "%"); isPercent {
		percent, err := strconv.Atoi(digits)
		if err != nil || percent < 0 || percent > 100 {
			return nil, fmt.Errorf("%s must be a percentage from 0%% to 100%%: %q", field, s)
		}
		rule.percent, rule.value = true, percent
		return rule, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s must be an integer of 0 or more, or a percentage: %q", field, s)
	}
	rule.value = n
	return rule, nil
}

// minHealthy returns how many of the observed nodes must be healthy for new
// remediations to start.
func (r budgetRule) minHealthy(observed int) int {
	value := r.value
	if r.percent {
		value = (observed*r.value + 99) / 100
	}
	if r.maxUnhealthy {
		return max(observed-value, 0)
	}
	return value
}

// stormRules says when a storm starts and ends. Storm recovery holds back
// new remediations during a mass failure.
//
// With stormRecoveryThreshold (the spec's feature), a storm "is triggered by
// number of remediation reaching minHealthy/maxUnhealthy maximum": it starts
// when the nodes under remediation (with a resource, or a create this plan
// admitted that succeeded) number at least one and at least
// observed-minHealthy, the most the budget allows at once. Nodes whose
// condition has not held for its duration yet, or that wait for a gate,
// count against healthyNodes (the budget) but are no remediation. It ends
// when at most stormRecoveryThreshold nodes are unhealthy (the spec's
// "unhealthyNodes ≤ stormRecoveryThreshold"). A storm also needs more
// unhealthy nodes than the threshold to start: with a threshold below
// observed-minHealthy, as the spec asks, that always holds; with a larger one
// it keeps the storm from ending and starting again on every evaluation.
//
// With only stormCooldownDuration (upstream's feature, kept for its objects), a
// storm starts when healthy < minHealthy and ends when that no longer holds.
//
// With a cooldown, the end also waits for stormCooldownDuration after the end
// condition starts to hold; the cooldown restarts when the condition breaks.
//
// Neither starts while the NodeHealthCheck is paused or disabled: it starts
// no remediation then, and holds back none that a storm would.
type stormRules struct {
	threshold *int32
	cooldown  time.Duration
}

func stormRulesOf(spec *v1alpha1.NodeHealthCheckSpec) stormRules {
	r := stormRules{threshold: spec.StormRecoveryThreshold}
	if spec.StormCooldownDuration != nil {
		r.cooldown = spec.StormCooldownDuration.Duration
	}
	return r
}

func (r stormRules) configured() bool {
	return r.threshold != nil || r.cooldown > 0
}

// canEnd tells whether the storm's end condition holds.
func (r stormRules) canEnd(healthy, unhealthy, minHealthy int) bool {
	if r.threshold != nil {
		return unhealthy <= int(*r.threshold)
	}
	return healthy >= minHealthy
}

// stormCount is what a storm's start is decided from.
type stormCount struct {
	// remediations is the number of nodes under remediation.
	remediations int
	observed     int
	healthy      int
	minHealthy   int
}

// starts tells whether a storm starts.
func (r stormRules) starts(c stormCount) bool {
	unhealthy := c.observed - c.healthy
	if unhealthy == 0 {
		return false
	}
	if r.threshold != nil {
		return c.remediations > 0 && c.remediations >= c.observed-c.minHealthy && unhealthy > int(*r.threshold)
	}
	return c.healthy < c.minHealthy
}
