package check

import (
	"testing"
	"time"
)

// TestStormMayEnd: when the controller may first have ended a storm, from
// the changes at which its end condition held or broke.
func TestStormMayEnd(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	start := func(s int) stormPoint { return stormPoint{at: at(s), starts: true} }
	neither := func(s int) stormPoint { return stormPoint{at: at(s)} }
	end := func(s int, cooldown time.Duration) stormPoint {
		return stormPoint{at: at(s), ends: true, cooldown: cooldown}
	}
	for _, tt := range []struct {
		name   string
		points []stormPoint
		unrest []span
		blind  []span
		until  int
		want   int // -1: none
	}{
		{name: "no end", points: []stormPoint{start(0), neither(10)}, until: 100, want: -1},
		{name: "a threshold ends at once", points: []stormPoint{start(0), neither(10), end(20, 0)}, until: 100, want: 20},
		{name: "a cooldown passes", points: []stormPoint{start(0), end(20, 30*time.Second)}, until: 100, want: 49},
		{name: "a cooldown not yet passed", points: []stormPoint{start(0), end(20, 30*time.Second)}, until: 40, want: 49},
		{name: "a break seen starts the cooldown again", points: []stormPoint{start(0), end(20, 30*time.Second), neither(30), end(40, 30*time.Second)}, until: 100, want: 69},
		{name: "a break shorter than pictureLag may go unseen", points: []stormPoint{start(0), end(20, 30*time.Second), neither(30), end(33, 30*time.Second)}, until: 100, want: 49},
		{name: "a break during unrest may go unseen", points: []stormPoint{start(0), end(20, 30*time.Second), neither(30), end(45, 30*time.Second)}, unrest: []span{{from: at(35), to: at(40)}}, until: 100, want: 49},
		{name: "a cooldown seen to pass just before the break", points: []stormPoint{start(0), end(20, 30*time.Second), neither(47)}, until: 100, want: 49},
		{name: "a cooldown the break cut short", points: []stormPoint{start(0), end(20, 30*time.Second), neither(40)}, until: 100, want: -1},
		{name: "a stale picture may show an end the cluster never had", points: []stormPoint{start(0), neither(20)}, blind: []span{{from: at(15)}}, until: 100, want: 15},
		{name: "an end the cluster had before the watches went stale", points: []stormPoint{start(0), end(20, 0)}, blind: []span{{from: at(30)}}, until: 100, want: 20},
		{name: "the shortest cooldown of an edited spec", points: []stormPoint{start(0), end(20, 2*time.Minute), end(25, 30*time.Second)}, until: 100, want: 49},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Checker{unrest: tt.unrest, blind: tt.blind}
			got, ended := c.stormMayEnd(tt.points, at(tt.until))
			switch {
			case tt.want < 0 && ended:
				t.Errorf("may end at %s, want never", got.Sub(t0))
			case tt.want >= 0 && (!ended || !got.Equal(at(tt.want))):
				t.Errorf("may end at %s (%v), want %ds", got.Sub(t0), ended, tt.want)
			}
		})
	}
}
