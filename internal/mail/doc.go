// Package mail builds and sends the notifier's emails (docs/design.md §4,
// seed 004): collaboration invites, comments and @mentions, and reactions.
//
// The core is pure: Message is plain data, and InviteEmail, CommentEmail
// and ReactionEmail turn plain data into a Message with a one-line subject,
// a text/plain part and a text/html part (written in Go, escaped as
// html/template would: see render.go for why not with templates).
// All user content (names, titles, comment text, emoji) is treated as
// hostile: it is HTML-escaped in the HTML part, stripped of control and
// bidirectional-override characters everywhere, flattened to one line in
// subjects (no CR/LF, so no header injection), and length-bounded; links
// are used only when they are absolute http(s) URLs.
//
// Two thin adapters implement Sender:
//
//   - SES sends through Amazon SES v2 SendEmail (simple content). It is the
//     only place that retries: throttling, server faults and transport
//     errors are retried with capped exponential backoff and full jitter;
//     failures no retry can fix come back as *PermanentError so that the
//     caller dead-letters instead of retrying forever. The sesv2 client
//     must not retry on its own: build it with NewSESClient.
//   - EMLDir is the local stack's mailbox: each message becomes an .eml
//     file that a mail client opens, written atomically.
//
// Delivery guarantees: a nil error means the service accepted the message
// (SES queued it / the file is on disk). Delivery is at least once: a send
// retried after an ambiguous failure (5xx, timeout) may have gone out
// already. Nothing here deduplicates; Message.IdempotencyKey only travels
// with the message (X-Idempotency-Key header, idempotency_key tag) so that
// the recipient side can. Exactly-once per (source change, recipient) is
// the caller's job, with an idempotency record around Send.
//
// There is no package-level mutable state; clocks, sleeps and jitter are
// injected.
package mail
