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

// withNeeds are the named tasks and every task they need, in the order of
// tasks: a part of a release, built by the release's own tasks.
func withNeeds(tasks []task, names ...string) ([]task, error) {
	byName := map[string]task{}
	for _, t := range tasks {
		byName[t.name] = t
	}
	wanted := map[string]bool{}
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		t, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("no task %s", name)
		}
		if !wanted[name] {
			wanted[name] = true
			names = append(names, t.needs...)
		}
	}
	var part []task
	for _, t := range tasks {
		if wanted[t.name] {
			part = append(part, t)
		}
	}
	return part, nil
}

// progressEvery is how often the tasks still running are named.
const progressEvery = 30 * time.Second

// runTasks runs the tasks and reports each one's end on w; the first
// failure cancels the rest.
func runTasks(ctx context.Context, tasks []task, slots int, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &taskRun{
		w: w, total: len(tasks), cancel: cancel,
		done: map[string]chan struct{}{}, slots: make(chan struct{}, slots), running: map[string]time.Time{},
	}
	for _, t := range tasks {
		r.done[t.name] = make(chan struct{})
	}
	for _, t := range tasks {
		for _, n := range t.needs {
			if r.done[n] == nil {
				return fmt.Errorf("task %s needs %s, which is not a task", t.name, n)
			}
		}
	}
	r.start = time.Now()
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Go(func() { r.run(ctx, t) })
	}
	stop := make(chan struct{})
	go r.reportProgress(stop)
	wg.Wait()
	close(stop)
	return r.firstErr
}

// taskRun is one run of a release's tasks.
type taskRun struct {
	w      io.Writer
	total  int
	cancel context.CancelFunc
	start  time.Time
	// done is closed, by task name, once the task ended.
	done map[string]chan struct{}
	// slots holds a token for each build running.
	slots chan struct{}

	mu       sync.Mutex
	firstErr error
	// running holds when each task running began.
	running  map[string]time.Time
	finished int
}

// run runs a task once those it needs are done, in a build slot if it
// builds, unless the run is cancelled first.
func (r *taskRun) run(ctx context.Context, t task) {
	defer close(r.done[t.name])
	for _, n := range t.needs {
		select {
		case <-r.done[n]:
		case <-ctx.Done():
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	if t.build {
		select {
		case r.slots <- struct{}{}:
			defer func() { <-r.slots }()
		case <-ctx.Done():
			return
		}
	}
	r.mu.Lock()
	r.running[t.name] = time.Now()
	r.mu.Unlock()
	var out strings.Builder
	err := t.run(ctx, &out)
	r.mu.Lock()
	took := time.Since(r.running[t.name]).Round(time.Second)
	delete(r.running, t.name)
	r.finished++
	n := r.finished
	r.mu.Unlock()
	if err != nil {
		r.fail(fmt.Errorf("%s: %w\n%s", t.name, err, out.String()))
		return
	}
	fmt.Fprintf(r.w, "release: [%d/%d] %s (%s)\n", n, r.total, t.name, took)
}

// fail keeps the first error and cancels the tasks left.
func (r *taskRun) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr == nil {
		r.firstErr = err
		r.cancel()
	}
}

// reportProgress names the tasks still running every progressEvery, until
// stop is closed.
func (r *taskRun) reportProgress(stop <-chan struct{}) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			r.mu.Lock()
			var names []string
			for name, since := range r.running {
				names = append(names, fmt.Sprintf("%s for %s", name, time.Since(since).Round(time.Second)))
			}
			r.mu.Unlock()
			slices.Sort(names)
			if len(names) > 0 {
				fmt.Fprintf(r.w, "release: %s in, running: %s\n", time.Since(r.start).Round(time.Second), strings.Join(names, ", "))
			}
		}
	}
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
