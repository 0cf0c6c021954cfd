package ha

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// attackersEnv, when set, makes the test binary the attackers of one
// siege, and nothing else (TestMain): what it holds is the siege's
// attackersSpec, what it prints its attackersReport.
const attackersEnv = "NHC_SIEGE_ATTACKERS"

// attackersSpec is what the attackers attack, and for how long.
type attackersSpec struct {
	Probe, Metrics, Nobody string
	For                    time.Duration
}

// attackersReport is what the attackers got.
type attackersReport struct {
	Codes        map[string]map[int]int
	HTTP2Answers int64
}

// startAttackers starts the attackers of c's ports in a process of their
// own until attack ends, and returns what waits for their report.
func startAttackers(t *testing.T, attack context.Context, c *framework.Controller, nobody string) func() attackersReport {
	t.Helper()
	deadline, _ := attack.Deadline()
	spec, err := json.Marshal(attackersSpec{Probe: c.ProbeAddress, Metrics: c.MetricsAddress, Nobody: nobody, For: time.Until(deadline)})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), attackersEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return func() attackersReport {
		require.NoError(t, cmd.Wait(), "the attackers")
		var report attackersReport
		require.NoError(t, json.Unmarshal(out.Bytes(), &report), "the attackers' report: %s", out.String())
		return report
	}
}

// runAttackers is the attackers' process: it attacks as spec says, then
// prints its report.
func runAttackers(spec string) int {
	var s attackersSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	attack, stop := context.WithTimeout(context.Background(), s.For)
	defer stop()
	var attackers sync.WaitGroup
	codes := newCodeCounter()
	http2Answers := launchAttack(attack, &attackers, s.Probe, s.Metrics, s.Nobody, codes)
	attackers.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(attackersReport{Codes: codes.snapshot(), HTTP2Answers: http2Answers.Load()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
