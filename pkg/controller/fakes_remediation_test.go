package controller

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// fakeRemediations is the remediation rooms, observer and writer, faked:
// it reads seen, and records the writes it is asked to send. By default
// every write succeeds.
type fakeRemediations struct {
	// mu guards syncs: a sync sends its creates in parallel.
	mu        sync.Mutex
	clock     *clocktesting.FakeClock
	seen      gather.Seen
	forgotten []string
	// left is what WatchLeft answers for every deleted NodeHealthCheck.
	left remediation.Left
	// createErr and annotateErr, when set, answer every create and every
	// annotation.
	createErr, annotateErr error
	// createErrOf, when set, answers the creates of its nodes.
	createErrOf map[string]error
	// deletesGone answers every delete: the resource went at once, or a
	// finalizer holds it (false).
	deletesGone bool
	// syncs are the writes each sync asked for, from its first look at
	// the ledger (LookUpLapsed).
	syncs []fakeSync
}

// fakeSync is what one sync asked to write: the creates, sent or failed,
// and the annotations.
type fakeSync struct {
	creates     []health.Creation
	annotations []fakeAnnotation
}

// current is the sync under way.
func (f *fakeRemediations) current() *fakeSync {
	if len(f.syncs) == 0 {
		f.syncs = append(f.syncs, fakeSync{})
	}
	return &f.syncs[len(f.syncs)-1]
}

// creates are the creates every sync asked for.
func (f *fakeRemediations) creates() []health.Creation {
	var all []health.Creation
	for _, s := range f.syncs {
		all = append(all, s.creates...)
	}
	return all
}

// fakeAnnotation is an annotation asked for.
type fakeAnnotation struct {
	ref   corev1.ObjectReference
	key   string
	value *string
}

func (f *fakeRemediations) WatchAll(context.Context, func() ([]*v1alpha1.NodeHealthCheck, error)) error {
	return nil
}

func (f *fakeRemediations) Watch(context.Context, *v1alpha1.NodeHealthCheck, []*v1alpha1.NodeHealthCheck) (*remediation.Watched, error) {
	return &remediation.Watched{}, nil
}

// Read returns seen with maps of its own, as every read does.
func (f *fakeRemediations) Read(*v1alpha1.NodeHealthCheck, *remediation.Watched) (gather.Seen, error) {
	seen := f.seen
	seen.OtherOwners = maps.Clone(seen.OtherOwners)
	return seen, nil
}

func (f *fakeRemediations) Forget(nhc string) { f.forgotten = append(f.forgotten, nhc) }

func (f *fakeRemediations) WatchLeft(string) (remediation.Left, error) { return f.left, nil }

func (f *fakeRemediations) Create(_ context.Context, _ *v1alpha1.NodeHealthCheck, c health.Creation, _ *remediation.Watched) (health.Created, error) {
	f.mu.Lock()
	s := f.current()
	s.creates = append(s.creates, c)
	f.mu.Unlock()
	if f.createErr != nil {
		return health.Created{}, f.createErr
	}
	if err := f.createErrOf[c.Node]; err != nil {
		return health.Created{}, err
	}
	return health.Created{Creation: c, Resource: createdRef(c), CreationTime: f.clock.Now()}, nil
}

func (f *fakeRemediations) Delete(context.Context, string, *remediation.Watched, health.Deletion) (bool, error) {
	return f.deletesGone, nil
}

func (f *fakeRemediations) Annotate(_ context.Context, _ *remediation.Watched, ref corev1.ObjectReference, key string, value *string) error {
	f.mu.Lock()
	s := f.current()
	s.annotations = append(s.annotations, fakeAnnotation{ref: ref, key: key, value: value})
	f.mu.Unlock()
	return f.annotateErr
}

func (f *fakeRemediations) RemoveNodeAnnotation(context.Context, string, string) error { return nil }

// LookUpLapsed starts the record of a sync: every sync looks first.
func (f *fakeRemediations) LookUpLapsed(context.Context) { f.syncs = append(f.syncs, fakeSync{}) }

// The sync tests call the handlers themselves.
func (f *fakeRemediations) AddChangeHandler(remediation.ResourceChangeFunc) {}
func (f *fakeRemediations) AddSlotFreedHandler(func())                      {}
func (f *fakeRemediations) AddKindChangeHandler(remediation.KindChangeFunc) {}

// fakeLeases takes every node lease, after beforeAcquire, and records the
// deadline of each write's context and the leases released.
type fakeLeases struct {
	beforeAcquire func()
	// refusal, when set, refuses every Acquire: the lease is out of
	// reach, as Problem says.
	refusal   string
	deadlines []time.Time
	mu        sync.Mutex
	released  []string
}

func (f *fakeLeases) Acquire(ctx context.Context, _ health.LeaseRequest) error {
	deadline, _ := ctx.Deadline()
	f.mu.Lock()
	f.deadlines = append(f.deadlines, deadline)
	f.mu.Unlock()
	if f.beforeAcquire != nil {
		f.beforeAcquire()
	}
	if f.refusal != "" {
		return errors.New(f.refusal)
	}
	return nil
}

func (f *fakeLeases) Renew(context.Context, health.LeaseRequest) error { return nil }
func (f *fakeLeases) Problem(error) string                             { return f.refusal }

func (f *fakeLeases) Release(_ context.Context, node, holder string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, holder+"/"+node)
	return nil
}
