package store

// The store's domains, each a type of its own over the one Store (the
// table, its clients, and the core: keys, marshalling, transactions,
// batch reads and writes, quarantine), as benbjohnson/wtf keeps a service
// per entity over a shared DB. A reader holds one domain whole: its type
// and its files. Store holds each as a field, so a caller names the domain
// (st.Rooms.CreateRoom(…)); a domain reaches the core, and another domain
// (s.Chat.…), through its *Store. (They are fields, not embedded: promoted
// methods would give *Store every domain's methods again, and the
// compiler's wrappers for them put the notifier's bootstrap over 10 MiB.)

// Rooms is the search rooms (seed 000): rooms, members, criteria and
// their derived snapshots, listings, the activity feed (rooms.go,
// listings.go, activities.go).
type Rooms struct{ *Store }

// Locations is seed 001's locations and their unique codes
// (locations.go).
type Locations struct{ *Store }

// Chat is seed 002's chat: rooms, messages, connections and their
// per-user registry (chat.go).
type Chat struct{ *Store }

// Cooking is seed 003's recipes, ingredients, cooking histories and
// sessions, and what the projector derives from them (recipes.go,
// ingredients.go, cookingderived.go).
type Cooking struct{ *Store }

// Combiner is a recipe's totals' combiner: what a projector call counts
// goes to pending items first, and drains move it into the totals
// (combiner.go, whose doc comment states the invariants it rests on). It
// is not a field of Store, as the other domains are: made where it is used
// (store.Combiner{Store: st}), it is not linked into the programs that
// never drain (a field's type and its methods are, for reflection: the
// notifier's Lambda bootstrap went over its 10 MiB with it).
type Combiner struct{ *Store }

// Collab is seed 004's collaboration: resources, access items, invites,
// collaborators, comments, reactions, notifications, profiles and
// preferences (collab.go, access.go).
type Collab struct{ *Store }

// Requests is the bookkeeping of requests sent with an Idempotency-Key
// and of once-per-record effects (requests.go, once.go).
type Requests struct{ *Store }

// Upkeep is the operator's work on derived data: verify and rebuild
// (drift.go), backfills (backfill.go).
type Upkeep struct{ *Store }
