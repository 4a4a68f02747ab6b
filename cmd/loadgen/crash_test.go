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
// (no more than the sends in flight at SES when the notifier was killed). Duplicates are reported. The writer is
// not killed: its clients would see refused connections, which is not
// what this suite is about. The seed is printed; FAULT_SEED re-runs it.
func TestCrashSuite(t *testing.T) {
	const kills = 20
	duration := 20 * time.Second
	seed, c, ses, bus := newSuite(t, 0, duration, 15*time.Second)
	// A kill between claiming an e-mail and completing it leaves the claim
	// held: the restarted notifier takes the send over when the hold ends
	// (30 s by default; shorter here, so that it shows within the drain).
	c.programEnv["notifier"] = append(c.programEnv["notifier"], "MAIL_HOLD=3s", "MAIL_SEND_TIMEOUT=1s")
	// SES takes 100 ms to accept a send, so that some kills fall inside
	// the window between SES accepting an e-mail and its completion record.
	ses.delay = 100 * time.Millisecond
	var window int64 // sends in flight at the notifier's kills (an upper bound)
	var mu sync.Mutex
	killed := map[string]int{}
	c.during = func(ctx context.Context, s *stack.Stack) {
		rnd := rand.New(rand.NewPCG(seed, 3))
		gap := duration / kills / 2 // leaves time for the restarts
		for i := 0; i < kills && ctx.Err() == nil; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(rnd.Int64N(int64(gap)))):
			}
			name := "notifier"
			if rnd.IntN(3) == 0 {
				name = "projector"
			}
			if name == "notifier" && i%2 == 1 {
				// Every other notifier kill waits (a little) for an
				// e-mail in flight at SES: the window that matters.
				for wait := time.Now().Add(gap); ses.inFlight.Load() == 0 && time.Now().Before(wait) && ctx.Err() == nil; {
					time.Sleep(time.Millisecond)
				}
			}
			inFlight := ses.inFlight.Load()
			if err := s.Kill(name); err != nil {
				t.Errorf("kill %s: %v", name, err)
				return
			}
			mu.Lock()
			killed[name]++
			if name == "notifier" {
				window += inFlight + ses.inFlight.Load()
			}
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
		verdict.emailDupsAllowed = int(window)
		mu.Unlock()
		return verdict.check(ctx, t, clients, arn, "load", ses, bus)
	}
	runOnePhase(t, c, 4*time.Minute)
	total := killed["notifier"] + killed["projector"]
	if total < kills/2 {
		t.Errorf("only %d kills: %v", total, killed)
	}
	t.Logf("kills: %v; compared %d derived items, %d e-mails (%d sent twice, at most %d were in flight at the kills), %d events (%d duplicates)",
		killed, verdict.derived, verdict.emails, verdict.emailDups, verdict.emailDupsAllowed, verdict.events, verdict.eventDups)
}
