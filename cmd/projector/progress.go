//go:build !lambda.norpc

package main

import (
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a long command's progress: a bar on a terminal (count,
// rate, estimated time left when the total is known), a log line a second
// otherwise (a CI log, a file).
type progress struct {
	log   *slog.Logger
	what  string
	bar   *progressbar.ProgressBar
	start time.Time
	last  time.Time
	total int64
}

// newProgress starts showing progress of what; total is what the work
// will come to, or -1 when unknown (an estimate is fine: the bar grows).
func newProgress(log *slog.Logger, what string, total int64) *progress {
	p := &progress{log: log, what: what, start: time.Now(), total: total}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(total > 0), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	return p
}

// set reports n done so far, with details for the log line.
func (p *progress) set(n int64, details ...any) {
	if p.bar != nil {
		if p.total > 0 && n > p.total {
			p.total = n
			p.bar.ChangeMax64(n)
		}
		_ = p.bar.Set64(n)
		return
	}
	if time.Since(p.last) < time.Second {
		return
	}
	p.last = time.Now()
	p.log.Info(p.what+" progress", append([]any{"done", n, "perSecond", rate(n, time.Since(p.start))}, details...)...)
}

// finish ends the bar; it returns the rate over the whole run.
func (p *progress) finish(n int64) float64 {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	return rate(n, time.Since(p.start))
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(float64(n)/d.Seconds()*10)) / 10
}
