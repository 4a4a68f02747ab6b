package mail_test

import (
	"fmt"
	"time"

	"github.com/dynastream/dynastream/internal/mail"
)

func ExampleInviteEmail() {
	m := mail.InviteEmail(mail.InviteData{
		To:            "bob@example.com",
		InviterName:   "Alice",
		ResourceType:  "goal",
		ResourceTitle: "Run a marathon",
		Message:       "Would you like to collaborate on this goal?",
		InviteURL:     "https://app.example.com/invites/inv-456",
		ExpiresAt:     time.Date(2024, 2, 14, 10, 30, 0, 0, time.UTC),
	})
	m.IdempotencyKey = "invite#inv-456#bob@example.com"
	fmt.Println(m.Subject)
	// Output: You have been invited to collaborate on a goal
}
