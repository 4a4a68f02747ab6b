// Package drift says how the derived items of the table differ from what
// its core items say they must be: `projector verify` prints the
// differences, `projector rebuild` writes the repairs.
//
// Check is pure: a function of the facts a scan of the table read (Facts)
// and of nothing else, so the same facts always give the same differences
// and the same repairs. It covers the derived items that are functions of
// the current core state:
//   - reaction counts: a comment's COUNTS by emoji equal its Reaction items;
//   - recipe ratings: a recipe's ratingCount, ratingSum, avgRating and GSI2
//     sort key equal the ratings of its cooking history entries;
//   - trending: a recipe's count for an ISO week equals its history entries
//     cooked that week (no item at 0);
//   - recent cookings: one RecentCooking per history entry of an existing
//     recipe, with the entry's fields, and none without an entry;
//   - rooms (with Facts.Snapshot set): each room's newest combined
//     criteria and compatibility equal what the room derives now from its
//     current members' latest criteria (older versions are history: the
//     state they were derived from is not all in the core items any more,
//     a member who left is gone); a deleted room's partition, the
//     UserRoom items naming it and its chat's messages are gone (its
//     cascade is complete);
//   - room activity (with Facts.ExpectActivities): every feed entry the
//     room's core items call for is there — its creation, each current
//     member's joining, each criteria version, each listing pinned, each
//     message of its chat — found by what it says (its id comes from the
//     stream record that made it, which the table does not keep); a
//     missing one is written under an id from the core item's key;
//   - resource access: one access item per resource member, role owner
//     for the Resource item's ownerId (even if they also collaborate),
//     collaborator for each other Collaborator item, and no other.
//
// Not covered (they are not functions of the core items alone): the rooms'
// older versions, the feed entries of what the core items no longer show
// (a member who left, a status change, a compatibility version), and so
// no stray entry either; notifications and suggestions (functions of
// time).
//
// A difference can also be a change the projector has not handled yet: a
// scan of a table that is being written sees changes still in the stream.
// Callers re-check differences after a pause (Recheck) and repair only with
// the projector caught up (see cmd/projector).
package drift
