package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// A release is tasks, each run once those it needs are done, the builds at
// most slots at a time: on two cores, two compilers keep both busy while
// the other tasks (archiving, hashing) run between them. Each task's
// output is kept and shown only if it fails, so that progress reads as
// one line a task.

// task is one step of the release.
type task struct {
	name string
	// needs are the tasks that must be done first.
	needs []string
	// build takes one of the build slots.
	build bool
	run   func(ctx context.Context, out io.Writer) error
}

// progressEvery is how often the tasks still running are named.
const progressEvery = 30 * time.Second

// runTasks runs the tasks and reports each one's end on w; the first
// failure cancels the rest.
func runTasks(ctx context.Context, tasks []task, slots int, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := map[string]chan struct{}{}
	for _, t := range tasks {
		done[t.name] = make(chan struct{})
	}
	for _, t := range tasks {
		for _, n := range t.needs {
			if done[n] == nil {
				return fmt.Errorf("task %s needs %s, which is not a task", t.name, n)
			}
		}
	}
	var (
		mu       sync.Mutex
		firstErr error
		running  = map[string]time.Time{}
		finished int
		wg       sync.WaitGroup
	)
	start := time.Now()
	sem := make(chan struct{}, slots)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[t.name])
			for _, n := range t.needs {
				select {
				case <-done[n]:
				case <-ctx.Done():
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			if t.build {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					return
				}
			}
			mu.Lock()
			running[t.name] = time.Now()
			mu.Unlock()
			var out strings.Builder
			err := t.run(ctx, &out)
			mu.Lock()
			took := time.Since(running[t.name]).Round(time.Second)
			delete(running, t.name)
			finished++
			n := finished
			mu.Unlock()
			if err != nil {
				fail(fmt.Errorf("%s: %w\n%s", t.name, err, out.String()))
				return
			}
			fmt.Fprintf(w, "release: [%d/%d] %s (%s)\n", n, len(tasks), t.name, took)
		}()
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				var names []string
				for name, since := range running {
					names = append(names, fmt.Sprintf("%s for %s", name, time.Since(since).Round(time.Second)))
				}
				mu.Unlock()
				slices.Sort(names)
				if len(names) > 0 {
					fmt.Fprintf(w, "release: %s in, running: %s\n", time.Since(start).Round(time.Second), strings.Join(names, ", "))
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	return firstErr
}

// command runs a command for a task, its output into the task's.
func command(ctx context.Context, out io.Writer, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if env != nil {
		cmd.Env = env
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
