package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// profiler saves the controller's pprof profiles of a run (--profile): a
// CPU profile over each phase of a known length and a heap profile at
// each phase's end, as <run>-<phase>.{cpu,heap}.pprof; the API server's
// CPU profile over the storm's creates, where the storm's time goes, as
// <run>-storm.apiserver.cpu.pprof; and the controller's heap 1.5 s into
// them, where its peak comes from, as <run>-storm-peak.heap.pprof.
type profiler struct {
	dir, run string
	// apiServer reads the API server's /debug/pprof.
	apiServer rest.Interface
}

// cpu profiles the controller for length in the background; wait returns
// once the profile is written.
func (p *profiler) cpu(ctx context.Context, address, phase string, length time.Duration) (wait func()) {
	seconds := max(int(length.Seconds()), 1)
	return inBackground(func() {
		p.save(ctx, phase+".cpu", time.Duration(seconds)*time.Second+scrapeTimeout,
			fromController(address, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds)))
	})
}

// apiServerCPU profiles the API server from start for length in the
// background; wait returns once the profile is written.
func (p *profiler) apiServerCPU(ctx context.Context, phase string, start time.Time, length time.Duration) (wait func()) {
	seconds := max(int(length.Seconds()), 1)
	return inBackground(func() {
		if !sleepUntil(ctx, start) {
			return
		}
		p.save(ctx, phase+".apiserver.cpu", time.Duration(seconds)*time.Second+scrapeTimeout, func(ctx context.Context) (io.ReadCloser, error) {
			return p.apiServer.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).Stream(ctx)
		})
	})
}

// heap saves the controller's heap profile after a garbage collection.
func (p *profiler) heap(ctx context.Context, address, phase string) {
	p.save(ctx, phase+".heap", scrapeTimeout, fromController(address, "/debug/pprof/heap?gc=1"))
}

// heapAt saves the controller's heap profile at t, in the background,
// without a garbage collection first: at the storm's peak, its allocations
// since the profile before it (pprof -diff_base) say where the peak comes
// from. wait returns once it is written.
func (p *profiler) heapAt(ctx context.Context, address, name string, t time.Time) (wait func()) {
	return inBackground(func() {
		if sleepUntil(ctx, t) {
			p.save(ctx, name+".heap", scrapeTimeout, fromController(address, "/debug/pprof/heap"))
		}
	})
}

// save writes what fetch reads, within timeout, as <run>-<name>.pprof.
func (p *profiler) save(ctx context.Context, name string, timeout time.Duration, fetch func(context.Context) (io.ReadCloser, error)) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	file := filepath.Join(p.dir, p.run+"-"+name+".pprof")
	body, err := fetch(ctx)
	if err == nil {
		err = writeFile(file, body)
		_ = body.Close()
	}
	if err != nil {
		log.Printf("warning: profile %s: %v", name, err)
		return
	}
	log.Printf("profile: %s", file)
}

// fromController reads a path of the controller's metrics port.
func fromController(address, path string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		url := "http://" + address + path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("%s: %s (is the controller run with --profiling?)", url, resp.Status)
		}
		return resp.Body, nil
	}
}

// inBackground runs f in a goroutine; wait returns once it returned.
func inBackground(f func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() { <-done }
}

// writeFile writes what r reads into file.
func writeFile(file string, r io.Reader) error {
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
