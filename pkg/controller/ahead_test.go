package controller

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The watch event of a status write often arrives before the write's
// answer: while the write is under way, it waits for the answer and takes
// the answered object; once the write failed, or after answerWait, it is
// decoded (nil).
func TestAWatchEventWaitsForTheAnswerOfAWriteUnderWay(t *testing.T) {
	written := &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "workers", ResourceVersion: "6"}}
	cases := []struct {
		name string
		// write is what the write under way does, after a while.
		write       func(ahead *aheadOfCache, ended func())
		want        *v1alpha1.NodeHealthCheck
		wantWaiting time.Duration
	}{
		{"answered", func(ahead *aheadOfCache, ended func()) {
			time.Sleep(5 * time.Millisecond)
			ahead.Remember(written)
			ended()
		}, written, 5 * time.Millisecond},
		{"failed", func(_ *aheadOfCache, ended func()) {
			time.Sleep(5 * time.Millisecond)
			ended()
		}, nil, 5 * time.Millisecond},
		{"hanging", func(_ *aheadOfCache, ended func()) {
			time.Sleep(time.Minute)
			ended()
		}, nil, answerWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ahead := &aheadOfCache{}
				ended := ahead.Writing(written.Name)
				var write sync.WaitGroup
				write.Go(func() { tc.write(ahead, ended) })
				start := time.Now()
				assert.Same(t, tc.want, ahead.Answered(written.Name, "6"))
				assert.Equal(t, tc.wantWaiting, time.Since(start))
				write.Wait()
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		ahead := &aheadOfCache{}
		ahead.Remember(written)
		ended := ahead.Writing(written.Name)
		defer ended()
		start := time.Now()
		assert.Same(t, written, ahead.Answered(written.Name, "6"), "remembered already")
		assert.Nil(t, ahead.Answered("other", "6"), "no write under way of another")
		assert.Zero(t, time.Since(start), "neither waits")
	})
}
