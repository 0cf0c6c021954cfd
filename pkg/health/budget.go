package health

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// MinHealthy returns how many of the selected nodes must be healthy for new
// remediations to start.
//
// minHealthy is used as is; maxUnhealthy becomes observed-maxUnhealthy, and a
// maxUnhealthy above the number of selected nodes means no limit. Percentages
// of the selected nodes round up, as upstream does, which makes minHealthy
// stricter and maxUnhealthy more permissive. A string of digits such as "3"
// is an absolute number.
func MinHealthy(spec *v1alpha1.NodeHealthCheckSpec, observed int) (int, error) {
	switch {
	case spec.MinHealthy != nil && spec.MaxUnhealthy != nil:
		return 0, fmt.Errorf("minHealthy and maxUnhealthy are mutually exclusive: set only one of them")
	case spec.MinHealthy != nil:
		return scaledValue("minHealthy", spec.MinHealthy, observed)
	case spec.MaxUnhealthy != nil:
		maxUnhealthy, err := scaledValue("maxUnhealthy", spec.MaxUnhealthy, observed)
		if err != nil {
			return 0, err
		}
		return max(observed-maxUnhealthy, 0), nil
	default:
		return 0, fmt.Errorf("set one of minHealthy or maxUnhealthy")
	}
}

// scaledValue resolves an integer, a string of digits, or a percentage of
// total rounded up.
func scaledValue(field string, value *intstr.IntOrString, total int) (int, error) {
	if value.Type == intstr.Int {
		if value.IntVal < 0 {
			return 0, fmt.Errorf("%s must not be negative: %d", field, value.IntVal)
		}
		return int(value.IntVal), nil
	}
	s := value.StrVal
	if digits, isPercent := strings.CutSuffix(s, "%"); isPercent {
		percent, err := strconv.Atoi(digits)
		if err != nil || percent < 0 || percent > 100 {
			return 0, fmt.Errorf("%s must be a percentage from 0%% to 100%%: %q", field, s)
		}
		return (total*percent + 99) / 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be an integer of 0 or more, or a percentage: %q", field, s)
	}
	return n, nil
}
