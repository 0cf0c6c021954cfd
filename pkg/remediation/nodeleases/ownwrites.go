package nodeleases

import (
	"sync"
	"time"
)

// ownEventWindow is how soon after its write the informer's event of a
// lease this process took counts as its own: the sync that took it records
// the outcome and requeues itself. Seen later (a watch that stalled, a
// relist), the event wakes the NodeHealthCheck as anyone's would: its
// syncs meanwhile did not see the lease, and nothing else will make it
// renew or release it.
const ownEventWindow = 10 * time.Second

// ownWrites are the leases this process is taking, by name, with the holder
// it writes and when: from before the write is sent until the informer
// shows it.
type ownWrites struct {
	mu     sync.Mutex
	writes map[string]ownWrite
}

type ownWrite struct {
	holder string
	at     time.Time
}

func (o *ownWrites) start(name, holder string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writes == nil {
		o.writes = map[string]ownWrite{}
	}
	o.writes[name] = ownWrite{holder: holder, at: now}
}

// failed forgets a write that failed: the lease's next event is not ours.
func (o *ownWrites) failed(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.writes, name)
}

// seen tells whether a lease's event, at now, shows the holder this
// process wrote within ownEventWindow, and forgets the write.
func (o *ownWrites) seen(name, holder string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.writes[name]
	delete(o.writes, name)
	return ok && w.holder == holder && now.Sub(w.at) < ownEventWindow
}
