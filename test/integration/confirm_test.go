package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// A create is confirmed against the NodeHealthCheck at the API server by
// its metadata alone: in a mass failure its status lists hundreds of nodes,
// which the check does not read, and the API server neither encodes nor
// sends them.
func TestACreateIsConfirmedWithTheNodeHealthChecksMetadataAlone(t *testing.T) {
	reads := &nhcReads{}
	config := rest.CopyConfig(cluster.Config)
	config.Wrap(reads.wrap)
	env := newRemediationEnvWith(t, versioned.NewForConfigOrDie(config))
	fw.CreateTemplate(t, "metadata", nil)
	nhc := fw.CreateNHC(t, "metadata", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("metadata"))
	})
	node := unhealthyNode(t, "metadata", "metadata-worker", corev1.ConditionFalse)

	env.sync(t, nhc.Name, time.Now())
	require.Len(t, remediationsOf(t, node), 1, "confirmed, and created")
	got := reads.all()
	require.Len(t, got, 1, "one read of the NodeHealthCheck a sync")
	assert.Equal(t, http.StatusOK, got[0].code)
	assert.Contains(t, got[0].body, `"kind":"PartialObjectMetadataList"`, "the API server sent the metadata alone")
	assert.Contains(t, got[0].body, string(nhc.UID))
	assert.NotContains(t, got[0].body, `"status"`)
	assert.NotContains(t, got[0].body, `"spec"`)
}

// nhcRead is one read of a NodeHealthCheck that a client sent, as answered.
type nhcRead struct {
	code int
	body string
}

// nhcReads records a client's reads of single NodeHealthChecks: lists by
// name.
type nhcReads struct {
	mu    sync.Mutex
	reads []nhcRead
}

func (r *nhcReads) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		const path = "/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks"
		byName := strings.HasPrefix(req.URL.Query().Get("fieldSelector"), "metadata.name=")
		if err != nil || req.Method != http.MethodGet || req.URL.Path != path || !byName {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reads = append(r.reads, nhcRead{code: resp.StatusCode, body: string(body)})
		return resp, nil
	})
}

func (r *nhcReads) all() []nhcRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]nhcRead(nil), r.reads...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A sync's node confirmations after the first read at least as new as it:
// the API server answers a list of one node by name with
// resourceVersionMatch=NotOlderThan the first read's resourceVersion, from
// its watch cache, with the node as it is or NotFound.
func TestANodeIsReadAtLeastAsNewAsAnEarlierRead(t *testing.T) {
	informer, err := nodecache.NewInformer(cluster.Config, 0)
	require.NoError(t, err)
	first := unhealthyNode(t, "notolderthan", "notolderthan-first", corev1.ConditionFalse)
	second := unhealthyNode(t, "notolderthan", "notolderthan-second", corev1.ConditionUnknown)
	ctx := context.Background()

	node, revision, err := informer.Node(ctx, first, "")
	require.NoError(t, err, "consistent")
	assert.Equal(t, first, node.Name)
	require.NotEmpty(t, revision)

	node, _, err = informer.Node(ctx, second, revision)
	require.NoError(t, err, "at least as new as the first read")
	assert.Equal(t, second, node.Name)

	_, goneRevision, err := informer.Node(ctx, "notolderthan-never-created", revision)
	assert.True(t, apierrors.IsNotFound(err), "NotFound: %v", err)
	assert.NotEmpty(t, goneRevision)
}
