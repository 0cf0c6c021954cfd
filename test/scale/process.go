package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicksPerSecond is USER_HZ, the unit of /proc/<pid>/stat's times: 100
// on every architecture Linux and Go share.
const clockTicksPerSecond = 100

// resetPeakRSS is what /proc/<pid>/clear_refs takes to reset VmHWM.
const resetPeakRSS = "5"

// cpuSeconds is a process's user and system CPU time so far, all threads.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count after it.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	// utime and stime are the 14th and 15th fields; fields[0] is the 3rd.
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	user, err1 := strconv.ParseUint(fields[utime], 10, 64)
	system, err2 := strconv.ParseUint(fields[stime], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times %q %q", pid, fields[utime], fields[stime])
	}
	return float64(user+system) / clockTicksPerSecond, nil
}

// residentMiB is a process's resident memory, from /proc/<pid>/status.
type residentMiB struct {
	// Peak is VmHWM, Current VmRSS.
	Peak, Current float64
	// Files is RssFile: the binary's pages and other mapped files, which
	// the kernel may drop and read again; the rest is the heap, the
	// stacks and the runtime's.
	Files float64
}

// memoryMiB reads a process's resident memory.
func memoryMiB(pid int) (residentMiB, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return residentMiB{}, err
	}
	var m residentMiB
	for line := range strings.SplitSeq(string(data), "\n") {
		var kib float64
		if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kib); err == nil {
			m.Peak = kib / 1024
		} else if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kib); err == nil {
			m.Current = kib / 1024
		} else if _, err := fmt.Sscanf(line, "RssFile: %f kB", &kib); err == nil {
			m.Files = kib / 1024
		}
	}
	return m, nil
}

// resetPeak makes VmHWM start again from the current RSS, so that each
// phase reports its own peak; where the kernel refuses, peaks only grow.
func resetPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte(resetPeakRSS), 0) == nil
}

// controlPlaneCPU is the CPU time so far of the API server and etcd that
// this process started: on a shared host they are what a storm waits for.
// Zero for one not found.
func controlPlaneCPU() (apiServer, etcd float64) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		fields := strings.Fields(string(data[closing+1:]))
		// fields[1] is the 4th field, the parent's pid.
		if open < 0 || len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		seconds, err := cpuSeconds(pid)
		if err != nil {
			continue
		}
		switch string(data[open+1 : closing]) {
		case "kube-apiserver":
			apiServer += seconds
		case "etcd":
			etcd += seconds
		}
	}
	return apiServer, etcd
}
