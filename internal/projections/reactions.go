package projections

import (
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// CountChange is one change to a comment's reaction counts.
type CountChange struct {
	CommentID, Emoji string
	Delta            int
}

// CountChangeOf maps a reaction's change to its count change: +1 when
// added, -1 when removed (false: not a reaction, or a derived item).
func CountChangeOf(c stream.Change) (CountChange, bool, error) {
	if c.Derived() || c.ItemType() != store.TypeReaction {
		return CountChange{}, false, nil
	}
	var r collab.Reaction
	switch c.Kind {
	case stream.Insert:
		if err := c.DecodeNew(&r); err != nil {
			return CountChange{}, false, err
		}
		return CountChange{r.CommentID, r.Emoji, +1}, true, nil
	case stream.Remove, stream.TTLRemove:
		if err := c.DecodeOld(&r); err != nil {
			return CountChange{}, false, err
		}
		return CountChange{r.CommentID, r.Emoji, -1}, true, nil
	}
	return CountChange{}, false, nil
}
