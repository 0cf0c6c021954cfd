package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/hack/release/gate"
)

// Tasks run after those they need, each reported once done; a failure
// stops the tasks that need it and shows the failed one's output.
func TestRunTasks(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fail    string
		ran     []string
		refused string
	}{
		{name: "all", ran: []string{"a", "b", "c", "d"}},
		{name: "one fails", fail: "b", ran: []string{"a", "b"}, refused: "b: broken\noutput of b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var ran []string
			step := func(name string) func(context.Context, io.Writer) error {
				return func(_ context.Context, out io.Writer) error {
					mu.Lock()
					ran = append(ran, name)
					mu.Unlock()
					if name == tt.fail {
						io.WriteString(out, "output of "+name)
						return errors.New("broken")
					}
					return nil
				}
			}
			var progress strings.Builder
			err := runTasks(context.Background(), []task{
				{name: "d", needs: []string{"c"}, run: step("d")},
				{name: "c", needs: []string{"a", "b"}, build: true, run: step("c")},
				{name: "a", build: true, run: step("a")},
				{name: "b", needs: []string{"a"}, run: step("b")},
			}, 1, &progress)
			if tt.refused != "" {
				require.Error(t, err)
				assert.Equal(t, tt.refused, err.Error())
			} else {
				require.NoError(t, err)
				assert.Regexp(t, `^release: \[1/4\] a \(0s\)\nrelease: \[2/4\] b \(0s\)\nrelease: \[3/4\] c \(0s\)\nrelease: \[4/4\] d \(0s\)\n$`, progress.String())
			}
			assert.Equal(t, tt.ran, ran, "in the order their needs allow")
		})
	}
	assert.ErrorContains(t, runTasks(context.Background(), []task{{name: "a", needs: []string{"z"}}}, 1, io.Discard), "a needs z, which is not a task")
}

// The part of a release a node test installs is built by the release's
// own tasks, the ones it needs and no other: its files are the release's.
func TestThePartANodeTestInstallsIsTheReleasesOwnTasks(t *testing.T) {
	all := releaseTasks(options{output: "out"}, gate.Release{Version: "v1.2.3"})
	part, err := withNeeds(all, installTask)
	require.NoError(t, err)
	var names []string
	for _, t := range part {
		names = append(names, t.name)
	}
	assert.Equal(t, []string{imageTaskName, installTask}, names)
	_, err = withNeeds(all, "nothing")
	assert.ErrorContains(t, err, "no task nothing")
}
