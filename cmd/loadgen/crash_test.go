package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/stack"
	"github.com/dynastream/dynastream/internal/ddb"
)

// TestCrashSuite runs a mixed workload through the real programs and kills
// the consumers with SIGKILL at random moments, 20 times (the notifier
// twice as often as the projector), restarting each at once, as a crashed
// or timed-out Lambda is replaced. After the drain the final state must
// equal an undisturbed run (the same check as the fault suite): derived
// items equal, no e-mail and no event missing, and e-mails sent twice only
// inside the documented window between a send and its completion record
// (at most one per notifier kill). Duplicates are reported. The writer is
// not killed: its clients would see refused connections, which is not
// what this suite is about. The seed is printed; FAULT_SEED re-runs it.
func TestCrashSuite(t *testing.T) {
	const kills = 20
	duration := 20 * time.Second
	seed, c, ses, bus := newSuite(t, 0, duration, 15*time.Second)
	var mu sync.Mutex
	killed := map[string]int{}
	c.during = func(ctx context.Context, s *stack.Stack) {
		rnd := rand.New(rand.NewPCG(seed, 3))
		gap := duration / kills
		for i := 0; i < kills && ctx.Err() == nil; i++ {
			// A random moment in each slot of the phase.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(rnd.Int64N(int64(gap)))):
			}
			name := "notifier"
			if rnd.IntN(3) == 0 {
				name = "projector"
			}
			if err := s.Kill(name); err != nil {
				t.Errorf("kill %s: %v", name, err)
				return
			}
			mu.Lock()
			killed[name]++
			mu.Unlock()
			if err := s.Restart(context.WithoutCancel(ctx), name); err != nil {
				t.Errorf("restart %s: %v", name, err)
				return
			}
		}
	}
	var verdict faultVerdict
	c.after = func(ctx context.Context, clients *ddb.Clients, arn string) error {
		mu.Lock()
		verdict.emailDupsAllowed = killed["notifier"]
		mu.Unlock()
		return verdict.check(ctx, t, clients, arn, "load", ses, bus)
	}
	runOnePhase(t, c, 4*time.Minute)
	total := killed["notifier"] + killed["projector"]
	if total < kills/2 {
		t.Errorf("only %d kills: %v", total, killed)
	}
	t.Logf("kills: %v; compared %d derived items, %d e-mails (%d sent twice, %d allowed), %d events (%d duplicates)",
		killed, verdict.derived, verdict.emails, verdict.emailDups, verdict.emailDupsAllowed, verdict.events, verdict.eventDups)
}
