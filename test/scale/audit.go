package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// controllerUser is the controller's identity, by which the benchmark
// tells its requests from the others in the audit log.
const controllerUser = "nhc-controller-bench"

// auditPolicy logs the metadata of every request, as production clusters
// do: the API server serializes an event for each, the kubelets'
// heartbeats and lease renewals included, and the controller's requests
// wait behind that work.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// auditLogMaxMiB keeps the API server from rotating the log during a run.
const auditLogMaxMiB = "100000"

// auditFlags writes the policy into dir and returns the kube-apiserver flags
// that log to dir.
func auditFlags(dir string) (map[string]string, string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, "", err
	}
	log := filepath.Join(dir, "audit.log")
	return map[string]string{
		"audit-policy-file": policy, "audit-log-path": log, "audit-log-maxsize": auditLogMaxMiB, "audit-log-format": "json",
	}, log, nil
}

// auditEvent is what the benchmark reads of an audit event.
type auditEvent struct {
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Received and Completed bound the API server's time on a request:
	// what a request waited for there, apart from the controller's own
	// waits.
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
}

// requestCounts are the controller's requests in a phase, as the API server
// logged them.
type requestCounts struct {
	// ByVerbResource counts "verb resource[/subresource]", or "verb path"
	// for discovery.
	ByVerbResource map[string]int `json:"byVerbResource"`
	Total          int            `json:"total"`
	// Leases are the requests on Leases: the node leases shared with other
	// operators and the leader election's renewals, counted apart so that
	// the requests per change can leave them out.
	Leases int `json:"leases"`
	// Failed are the responses with a code of 400 or more (conflicts,
	// not-found, throttling); FailedByVerbResource counts them by
	// "verb resource code".
	Failed               int            `json:"failed"`
	FailedByVerbResource map[string]int `json:"failedByVerbResource,omitempty"`
	// ServerTimeByVerbResource is the API server's time on the requests of
	// each "verb resource", from receipt to the response's end; watches
	// are left out.
	ServerTimeByVerbResource map[string]*latency `json:"serverTimeByVerbResource,omitempty"`
	serverTimes              map[string][]time.Duration
}

// failedCode is the first HTTP status of a failed request.
const failedCode = 400

// auditReader reads the audit log from where it last stopped.
type auditReader struct {
	path   string
	offset int64
}

// next counts the requests logged since the last call; a line still being
// written is left for the next call.
func (a *auditReader) next() (requestCounts, error) {
	counts := requestCounts{ByVerbResource: map[string]int{}}
	f, err := os.Open(a.path)
	if os.IsNotExist(err) {
		return counts, nil
	}
	if err != nil {
		return counts, err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return counts, err
	}
	reader := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := reader.ReadBytes('\n')
		if err == io.EOF {
			counts.summarizeServerTimes()
			return counts, nil
		}
		if err != nil {
			return counts, err
		}
		a.offset += int64(len(line))
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return counts, fmt.Errorf("audit log line at %d: %w", a.offset, err)
		}
		counts.add(e)
	}
}

// summarizeServerTimes sums up the API server's times by request kind.
func (c *requestCounts) summarizeServerTimes() {
	if len(c.serverTimes) > 0 {
		c.ServerTimeByVerbResource = make(map[string]*latency, len(c.serverTimes))
	}
	for key, times := range c.serverTimes {
		c.ServerTimeByVerbResource[key] = summarize(times)
	}
	c.serverTimes = nil
}

// add counts an event once per request: a watch when it starts, any other
// request when it completes.
func (c *requestCounts) add(e auditEvent) {
	if e.User.Username != controllerUser {
		return
	}
	want := "ResponseComplete"
	if e.Verb == "watch" {
		want = "ResponseStarted"
	}
	if e.Stage != want {
		return
	}
	// Discovery has no object: its path says what it read.
	key := e.Verb + " " + e.RequestURI
	if e.ObjectRef != nil {
		key = e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
	}
	c.ByVerbResource[key]++
	c.Total++
	if e.Verb != "watch" && !e.Received.IsZero() && !e.Completed.IsZero() {
		if c.serverTimes == nil {
			c.serverTimes = map[string][]time.Duration{}
		}
		c.serverTimes[key] = append(c.serverTimes[key], e.Completed.Sub(e.Received))
	}
	if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" {
		c.Leases++
	}
	if e.ResponseStatus != nil && e.ResponseStatus.Code >= failedCode {
		c.Failed++
		if c.FailedByVerbResource == nil {
			c.FailedByVerbResource = map[string]int{}
		}
		c.FailedByVerbResource[fmt.Sprintf("%s %d", key, e.ResponseStatus.Code)]++
	}
}
