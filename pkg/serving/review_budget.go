package serving

import "sync"

// reviewBudget bounds the reviews of callers without a cached answer: at
// most total at once, and at most perCaller of them for one client
// address, so that one pod flooding with unknown tokens or paths leaves
// slots for every other caller.
type reviewBudget struct {
	total, perCaller int

	mu       sync.Mutex
	inFlight int
	byCaller map[string]int
}

func newReviewBudget(total, perCaller int) *reviewBudget {
	return &reviewBudget{total: total, perCaller: perCaller, byCaller: map[string]int{}}
}

// take holds a slot for the caller; false when none is free for it.
func (b *reviewBudget) take(caller string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight >= b.total || b.byCaller[caller] >= b.perCaller {
		return false
	}
	b.inFlight++
	b.byCaller[caller]++
	return true
}

// release frees a slot that take held.
func (b *reviewBudget) release(caller string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	if b.byCaller[caller]--; b.byCaller[caller] == 0 {
		delete(b.byCaller, caller)
	}
}

// held is the number of slots held.
func (b *reviewBudget) held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}
