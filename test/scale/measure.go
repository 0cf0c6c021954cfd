package main

import (
	"context"
	"log"
	"time"
)

// phase is what one phase measured. Requests are the controller's, from
// the API server's audit log; CPU and memory are the controller process's.
type phase struct {
	Name       string  `json:"name"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"controllerCpuSeconds"`
	// APIServerCPUSeconds and EtcdCPUSeconds are the control plane's, on
	// the same host: where they take both cores, the controller waits.
	APIServerCPUSeconds float64 `json:"apiServerCpuSeconds"`
	EtcdCPUSeconds      float64 `json:"etcdCpuSeconds"`
	// Busiest is the second of the phase in which the three used the most.
	Busiest busiestSecond `json:"busiestSecond"`
	// PeakRSSMiB is VmHWM over the phase (over the run so far where the
	// kernel cannot reset it); RSSMiB is VmRSS at its end.
	PeakRSSMiB float64 `json:"peakRssMiB"`
	RSSMiB     float64 `json:"rssMiB"`
	// FileRSSMiB is the part of RSSMiB that maps files, the binary's
	// pages mostly.
	FileRSSMiB float64            `json:"fileRssMiB"`
	Requests   requestCounts      `json:"requests"`
	Controller controllerCounters `json:"controller"`
	// Changes are the node writes the controller receives: heartbeats in
	// the quiet phase, Ready changes (failures and recoveries) after it.
	Changes        int     `json:"changes"`
	CPUMsPerChange float64 `json:"controllerCpuMsPerChange"`
	// CPUMsPerChangeBeyondHeartbeats leaves out, with the heartbeats
	// running throughout, the CPU the quiet phase took for as long: what a
	// Ready change costs beyond watching the kubelets.
	CPUMsPerChangeBeyondHeartbeats float64 `json:"controllerCpuMsPerChangeBeyondHeartbeats,omitempty"`
	RequestsPerChange              float64 `json:"requestsPerChange"`
	// RequestsPerChangeBeyondLeases leaves out the requests on Leases.
	RequestsPerChangeBeyondLeases float64 `json:"requestsPerChangeBeyondLeases"`

	// StartupSeconds is from the controller's start to the last
	// NodeHealthCheck's status counting all its nodes.
	StartupSeconds float64 `json:"startupSeconds,omitempty"`
	// Detection is from a failed node's deadline (stored
	// lastTransitionTime + duration) to its remediation resource appearing;
	// Recovery from the node's Ready write to the resource's deletion.
	// LateBy is from a node's Ready write to a resource created after it.
	Detection *latency `json:"detection,omitempty"`
	Recovery  *latency `json:"recovery,omitempty"`
	LateBy    *latency `json:"lateBy,omitempty"`
	// Remediations are resources created; Late ones were created after
	// their node was Ready again; Duplicates while the node had one;
	// BudgetViolations while the NodeHealthCheck had as many as minHealthy
	// allows. Missed failed nodes got no resource before they recovered,
	// Leftover resources were not deleted at the phase's end.
	Remediations     int `json:"remediations"`
	Late             int `json:"late"`
	Duplicates       int `json:"duplicates"`
	BudgetViolations int `json:"budgetViolations"`
	Missed           int `json:"missed"`
	Leftover         int `json:"leftover"`
}

// measure runs a phase, then waits the settle time, and measures the
// controller over both. The startup phase starts the controller itself:
// before it, everything counts from zero. With --profile, a CPU profile
// covers the phase's first length, if known (not 0).
func (b *bench) measure(ctx context.Context, name string, run func(context.Context, *phase) error, length time.Duration) (*phase, error) {
	p := &phase{Name: name}
	var cpuBefore float64
	var before controllerCounters
	if b.controller != nil {
		if !resetPeak(b.controller.PID()) {
			log.Printf("warning: cannot reset the controller's peak RSS: peaks include earlier phases")
		}
		// The scrape comes first: serving /metrics is the bench's work,
		// not the controller's.
		before, _ = scrape(ctx, b.controller.MetricsAddress)
		cpuBefore, _ = cpuSeconds(b.controller.PID())
	}
	apiServerBefore, etcdBefore := controlPlaneCPU()
	if _, err := b.audit.next(); err != nil {
		return p, err
	}
	b.tracker.reset()
	log.Printf("phase %s", name)
	profiled := func() {}
	if b.profiler != nil && b.controller != nil && length > 0 {
		profiled = b.profiler.cpu(ctx, b.controller.MetricsAddress, name, length)
	}
	controllerPID := 0 // the startup phase starts it: not sampled
	if b.controller != nil {
		controllerPID = b.controller.PID()
	}
	stopSampling := sampleBusiest(controllerPID)
	started := time.Now()
	if err := run(ctx, p); err != nil {
		stopSampling()
		return p, err
	}
	if !sleepUntil(ctx, time.Now().Add(b.cfg.Settle)) {
		stopSampling()
		return p, ctx.Err()
	}
	p.Busiest = stopSampling()
	profiled()
	p.Seconds = time.Since(started).Seconds()

	pid := b.controller.PID()
	cpu, err := cpuSeconds(pid)
	if err != nil {
		return p, err
	}
	p.CPUSeconds = cpu - cpuBefore
	apiServer, etcd := controlPlaneCPU()
	p.APIServerCPUSeconds, p.EtcdCPUSeconds = apiServer-apiServerBefore, etcd-etcdBefore
	memory, err := memoryMiB(pid)
	if err != nil {
		return p, err
	}
	p.PeakRSSMiB, p.RSSMiB, p.FileRSSMiB = memory.Peak, memory.Current, memory.Files
	after, err := scrape(ctx, b.controller.MetricsAddress)
	if err != nil {
		return p, err
	}
	p.Controller = after.minus(before)
	if b.profiler != nil {
		b.profiler.heap(ctx, b.controller.MetricsAddress, name)
	}
	if p.Requests, err = b.audit.next(); err != nil {
		return p, err
	}
	if p.Changes > 0 {
		p.CPUMsPerChange = p.CPUSeconds * 1000 / float64(p.Changes)
		p.RequestsPerChange = float64(p.Requests.Total) / float64(p.Changes)
		p.RequestsPerChangeBeyondLeases = float64(p.Requests.Total-p.Requests.Leases) / float64(p.Changes)
	}
	return p, nil
}
