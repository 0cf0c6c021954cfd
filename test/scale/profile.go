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
// each phase's end, as <run>-<phase>.{cpu,heap}.pprof; and the API
// server's CPU profile over the storm's creates, where the storm's time
// goes, as <run>-storm.apiserver.cpu.pprof.
type profiler struct {
	dir, run string
	// apiServer reads the API server's /debug/pprof.
	apiServer rest.Interface
}

// cpu profiles the controller for seconds in the background; wait returns
// once the profile is written.
func (p *profiler) cpu(ctx context.Context, address, phase string, length time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		seconds := max(int(length.Seconds()), 1)
		p.save(ctx, address, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), phase+".cpu", time.Duration(seconds)*time.Second+scrapeTimeout)
	}()
	return func() { <-done }
}

// apiServerCPU profiles the API server from start for length in the
// background; wait returns once the profile is written.
func (p *profiler) apiServerCPU(ctx context.Context, phase string, start time.Time, length time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !sleepUntil(ctx, start) {
			return
		}
		seconds := max(int(length.Seconds()), 1)
		ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+scrapeTimeout)
		defer cancel()
		file := filepath.Join(p.dir, p.run+"-"+phase+".apiserver.cpu.pprof")
		raw, err := p.apiServer.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(file, raw, 0o644)
		}
		if err != nil {
			log.Printf("warning: the API server's profile %s: %v", phase, err)
			return
		}
		log.Printf("profile: %s", file)
	}()
	return func() { <-done }
}

// heap saves the heap profile after a garbage collection.
func (p *profiler) heap(ctx context.Context, address, phase string) {
	p.save(ctx, address, "/debug/pprof/heap?gc=1", phase+".heap", scrapeTimeout)
}

func (p *profiler) save(ctx context.Context, address, path, name string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	file := filepath.Join(p.dir, p.run+"-"+name+".pprof")
	if err := download(ctx, "http://"+address+path, file); err != nil {
		log.Printf("warning: profile %s: %v", name, err)
		return
	}
	log.Printf("profile: %s", file)
}

func download(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s (is the controller run with --profiling?)", url, resp.Status)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
