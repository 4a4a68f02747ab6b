package events

// Collaboration events (seed 004). No e-mail addresses: an invite says
// whether it went to an address, not which.

// ResourceCreated: a goal, quest or task was created.
type ResourceCreated struct {
	ResourceType string `json:"resourceType" doc:"goal, quest or task"`
	ResourceID   string `json:"resourceId"`
	Title        string `json:"title"`
	OwnerID      string `json:"ownerId"`
	CreatedAt    string `json:"createdAt"`
}

func (e ResourceCreated) occurred() string { return e.CreatedAt }

// InviteCreated: the owner invited someone.
type InviteCreated struct {
	InviteID     string `json:"inviteId"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	InviterID    string `json:"inviterId"`
	InviteeID    string `json:"inviteeId,omitempty" doc:"absent for an invite by e-mail only"`
	ByEmail      bool   `json:"byEmail" doc:"an e-mail address was given (not disclosed here)"`
	ExpiresAt    string `json:"expiresAt"`
	CreatedAt    string `json:"createdAt"`
}

func (e InviteCreated) occurred() string { return e.CreatedAt }

// InviteAnswer is the data of InviteAccepted and InviteDeclined.
type InviteAnswer struct {
	InviteID     string `json:"inviteId"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	InviterID    string `json:"inviterId"`
	UserID       string `json:"userId" doc:"who answered"`
	AnsweredAt   string `json:"answeredAt"`
}

func (e InviteAnswer) occurred() string { return e.AnsweredAt }

// InviteAccepted: the invitee accepted (and became a collaborator).
type InviteAccepted struct{ InviteAnswer }

// InviteDeclined: the invitee declined.
type InviteDeclined struct{ InviteAnswer }

// InviteExpired: a pending invite reached its expiry and DynamoDB's TTL
// removed it.
type InviteExpired struct {
	InviteID     string `json:"inviteId"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	InviterID    string `json:"inviterId"`
	InviteeID    string `json:"inviteeId,omitempty"`
	ExpiresAt    string `json:"expiresAt"`
}

func (e InviteExpired) occurred() string { return e.ExpiresAt }

// CollaboratorAdded: a user became a collaborator on a resource.
type CollaboratorAdded struct {
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	UserID       string `json:"userId"`
	Role         string `json:"role"`
	JoinedAt     string `json:"joinedAt"`
}

func (e CollaboratorAdded) occurred() string { return e.JoinedAt }

// CommentCreated: a comment or a reply was posted.
type CommentCreated struct {
	CommentID    string   `json:"commentId"`
	ResourceType string   `json:"resourceType"`
	ResourceID   string   `json:"resourceId"`
	ParentID     string   `json:"parentId,omitempty"`
	UserID       string   `json:"userId"`
	Text         string   `json:"text" doc:"HTML-escaped"`
	Mentions     []string `json:"mentions"`
	CreatedAt    string   `json:"createdAt"`
}

func (e CommentCreated) occurred() string { return e.CreatedAt }

// CommentEdited: the author changed a comment's text.
type CommentEdited struct {
	CommentID    string   `json:"commentId"`
	ResourceType string   `json:"resourceType"`
	ResourceID   string   `json:"resourceId"`
	UserID       string   `json:"userId"`
	Text         string   `json:"text"`
	Mentions     []string `json:"mentions"`
	UpdatedAt    string   `json:"updatedAt"`
}

func (e CommentEdited) occurred() string { return e.UpdatedAt }

// CommentDeleted: the author deleted a comment (soft delete).
type CommentDeleted struct {
	CommentID    string `json:"commentId"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	UserID       string `json:"userId"`
	DeletedAt    string `json:"deletedAt"`
}

func (e CommentDeleted) occurred() string { return e.DeletedAt }

// ReactionAdded: a user reacted to a comment.
type ReactionAdded struct {
	CommentID    string `json:"commentId"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	UserID       string `json:"userId"`
	Emoji        string `json:"emoji"`
	CreatedAt    string `json:"createdAt"`
}

func (e ReactionAdded) occurred() string { return e.CreatedAt }

// ReactionRemoved: a user took a reaction back.
type ReactionRemoved struct {
	CommentID string `json:"commentId"`
	UserID    string `json:"userId"`
	Emoji     string `json:"emoji"`
}

// NotificationPreferencesUpdated: a user changed their e-mail preferences.
type NotificationPreferencesUpdated struct {
	UserID          string `json:"userId"`
	EmailOnInvite   bool   `json:"emailOnInvite"`
	EmailOnComment  bool   `json:"emailOnComment"`
	EmailOnMention  bool   `json:"emailOnMention"`
	EmailOnReaction bool   `json:"emailOnReaction"`
	UpdatedAt       string `json:"updatedAt"`
}

func (e NotificationPreferencesUpdated) occurred() string { return e.UpdatedAt }

func init() {
	const at = "2026-01-02T15:04:05.000Z"
	answer := InviteAnswer{"01I…", "goal", "01G…", "alice", "bob", at}
	for _, d := range []Definition{
		{Name: "ResourceCreated", Source: SourceCollaboration, Doc: "A goal, quest or task was created.",
			Example: ResourceCreated{"goal", "01G…", "Run a marathon", "alice", at}},
		{Name: "InviteCreated", Source: SourceCollaboration, Doc: "The owner invited a user (by id and/or e-mail); it expires in 30 days.",
			Example: InviteCreated{"01I…", "goal", "01G…", "alice", "bob", true, "2026-02-01T15:04:05.000Z", at}},
		{Name: "InviteAccepted", Source: SourceCollaboration, Doc: "The invitee accepted and became a collaborator.", Example: InviteAccepted{answer}},
		{Name: "InviteDeclined", Source: SourceCollaboration, Doc: "The invitee declined.", Example: InviteDeclined{answer}},
		{Name: "InviteExpired", Source: SourceCollaboration, Doc: "A pending invite expired: DynamoDB's TTL removed it (both the service's and DynamoDB Local's record shapes).",
			Example: InviteExpired{"01I…", "goal", "01G…", "alice", "bob", at}},
		{Name: "CollaboratorAdded", Source: SourceCollaboration, Doc: "A user became a collaborator on a resource.",
			Example: CollaboratorAdded{"goal", "01G…", "bob", "collaborator", at}},
		{Name: "CommentCreated", Source: SourceCollaboration, Doc: "A comment (or, with parentId, a reply) was posted; text is HTML-escaped.",
			Example: CommentCreated{"01C…", "goal", "01G…", "", "bob", "Count me in, @alice!", []string{"alice"}, at}},
		{Name: "CommentEdited", Source: SourceCollaboration, Doc: "The author changed a comment's text.",
			Example: CommentEdited{"01C…", "goal", "01G…", "bob", "Count me in!", []string{}, at}},
		{Name: "CommentDeleted", Source: SourceCollaboration, Doc: "The author deleted a comment (its text is gone).",
			Example: CommentDeleted{"01C…", "goal", "01G…", "bob", at}},
		{Name: "ReactionAdded", Source: SourceCollaboration, Doc: "A user reacted to a comment.",
			Example: ReactionAdded{"01C…", "goal", "01G…", "alice", "👍", at}},
		{Name: "ReactionRemoved", Source: SourceCollaboration, Doc: "A user took a reaction back.",
			Example: ReactionRemoved{"01C…", "alice", "👍"}},
		{Name: "NotificationPreferencesUpdated", Source: SourceCollaboration, Doc: "A user changed their e-mail preferences.",
			Example: NotificationPreferencesUpdated{"bob", true, false, true, false, at}},
	} {
		define(d)
	}
	register("Resource", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil
		}
		return one[ResourceCreated](c.New)
	})
	register("ResourceAccess", nil) // internal: a member's access, checked in a write's transaction
	register("CollaborationInvite", inviteEvents)
	register("Collaborator", func(c Change) ([]any, error) {
		if c.Kind != Insert {
			return nil, nil
		}
		return one[CollaboratorAdded](c.New)
	})
	register("Comment", commentEvents)
	register("CommentRef", nil) // internal: finds a comment by id
	register("Reaction", func(c Change) ([]any, error) {
		switch c.Kind {
		case Insert:
			return one[ReactionAdded](c.New)
		case Remove, TTLRemove:
			return one[ReactionRemoved](c.Old)
		}
		return nil, nil
	})
	register("ReactionCounts", nil)      // derived from the reaction events
	register("ReactionCountMarker", nil) // internal to exact counting
	register("NotificationPreference", func(c Change) ([]any, error) {
		if c.Kind == Remove || c.Kind == TTLRemove {
			return nil, nil
		}
		return one[NotificationPreferencesUpdated](c.New)
	})
	register("Notification", nil)      // in-app notifications are side effects
	register("IdempotencyRecord", nil) // internal to exactly-once e-mail
}

func inviteEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		var v struct {
			InviteCreated
			InviteeEmail string `json:"inviteeEmail"`
		}
		if err := decode(c.New, &v); err != nil {
			return nil, err
		}
		v.ByEmail = v.InviteeEmail != ""
		return []any{v.InviteCreated}, nil
	case Modify:
		if str(c.Old, "status") == str(c.New, "status") {
			return nil, nil
		}
		var v struct {
			InviteAnswer
			RespondedBy string `json:"respondedBy"`
			UpdatedAt   string `json:"updatedAt"`
		}
		if err := decode(c.New, &v); err != nil {
			return nil, err
		}
		v.UserID, v.AnsweredAt = v.RespondedBy, v.UpdatedAt
		switch str(c.New, "status") {
		case "accepted":
			return []any{InviteAccepted{v.InviteAnswer}}, nil
		case "declined":
			return []any{InviteDeclined{v.InviteAnswer}}, nil
		}
	case TTLRemove:
		if str(c.Old, "status") == "pending" {
			return one[InviteExpired](c.Old)
		}
	}
	return nil, nil
}

func commentEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		var v CommentCreated
		if err := decode(c.New, &v); err != nil {
			return nil, err
		}
		if v.Mentions == nil {
			v.Mentions = []string{}
		}
		return []any{v}, nil
	case Modify:
		if str(c.New, "deletedAt") != "" {
			if str(c.Old, "deletedAt") != "" {
				return nil, nil
			}
			return one[CommentDeleted](c.New)
		}
		var v CommentEdited
		if err := decode(c.New, &v); err != nil {
			return nil, err
		}
		if v.Mentions == nil {
			v.Mentions = []string{}
		}
		return []any{v}, nil
	}
	return nil, nil
}
