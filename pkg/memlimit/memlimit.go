// Package memlimit sets the garbage collector's targets at start: a guard,
// not the cure. The collector is told about the container's memory limit,
// so that it works harder before the kernel kills the process; what the
// controller keeps is kept small by design.
package memlimit

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

const (
	// memoryLimitShare is the share of the container's limit the Go heap
	// aims to stay under, leaving room for stacks and what Go does not count.
	memoryLimitShare = 0.9
	// goMemLimitEnv, when set, wins: the runtime reads it itself.
	goMemLimitEnv = "GOMEMLIMIT"
	// gcPercent is the heap growth allowed between collections, instead of
	// Go's 100. Most of the heap is the node cache, and a heartbeat leaves
	// half a kilobyte of garbage: collecting at 1.25 times the live heap
	// keeps a storm's peak 4 MiB lower than 1.5 times did at 10,000 nodes,
	// for a fifth more of the storm's small CPU (decisions.md).
	gcPercent = 25
	// goGCEnv, when set, wins.
	goGCEnv = "GOGC"
)

// cgroupMemoryLimitFiles hold a container's memory limit: cgroup v2, then v1.
var cgroupMemoryLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Set sets the garbage collector's target, unless GOGC is set, and the Go
// memory limit from the container's, unless GOMEMLIMIT is set or there is
// no limit.
func Set(logger klog.Logger) {
	if os.Getenv(goGCEnv) == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv(goMemLimitEnv) != "" {
		return
	}
	limit, ok := containerMemoryLimit(cgroupMemoryLimitFiles)
	if !ok {
		return
	}
	debug.SetMemoryLimit(int64(float64(limit) * memoryLimitShare))
	logger.V(2).Info("Set the Go memory limit from the container's", "containerLimitBytes", limit, "share", memoryLimitShare)
}

// containerMemoryLimit reads the first limit file that holds a limit.
// "max", and cgroup v1's huge "unlimited" value, are no limit.
func containerMemoryLimit(files []string) (int64, bool) {
	const unlimited = 1 << 62
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || limit <= 0 || limit >= unlimited {
			return 0, false
		}
		return limit, true
	}
	return 0, false
}
