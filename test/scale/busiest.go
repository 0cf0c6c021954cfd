package main

import "time"

// busiestSecond is what the API server, etcd and the controller used, in
// cores, over the second of a phase in which the three used the most
// together: whether a burst (a storm's creates) had the host's cores to
// itself, or waited for them.
type busiestSecond struct {
	APIServer  float64 `json:"apiServerCores"`
	Etcd       float64 `json:"etcdCores"`
	Controller float64 `json:"controllerCores"`
}

func (b busiestSecond) total() float64 { return b.APIServer + b.Etcd + b.Controller }

// sampleInterval is how often the busiest second is sampled.
const sampleInterval = 250 * time.Millisecond

type cpuSample struct {
	apiServer, etcd, controller float64
}

// sampleBusiest samples the three processes' CPU time until the returned
// stop is called, which returns the busiest second.
func sampleBusiest(controllerPID int) (stop func() busiestSecond) {
	sample := func() cpuSample {
		apiServer, etcd := controlPlaneCPU()
		var controller float64
		if controllerPID != 0 {
			controller, _ = cpuSeconds(controllerPID)
		}
		return cpuSample{apiServer: apiServer, etcd: etcd, controller: controller}
	}
	done, result := make(chan struct{}), make(chan busiestSecond, 1)
	go func() {
		const window = int(time.Second / sampleInterval)
		samples := []cpuSample{sample()}
		var busiest busiestSecond
		ticker := time.NewTicker(sampleInterval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				result <- busiest
				return
			case <-ticker.C:
			}
			samples = append(samples, sample())
			if len(samples) <= window {
				continue
			}
			first, last := samples[len(samples)-1-window], samples[len(samples)-1]
			second := busiestSecond{APIServer: last.apiServer - first.apiServer, Etcd: last.etcd - first.etcd, Controller: last.controller - first.controller}
			if second.total() > busiest.total() {
				busiest = second
			}
		}
	}()
	return func() busiestSecond {
		close(done)
		return <-result
	}
}
