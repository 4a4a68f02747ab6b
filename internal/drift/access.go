package drift

import (
	"sort"

	"github.com/dynastream/dynastream/internal/collab"
)

// KindAccess is a resource member's access item (ACCESS#<userId> in the
// resource's partition): it must say what the Resource item's ownerId and
// the Collaborator items say, and no access item may be left over.
const KindAccess = "resource access"

// Access is one access item: userID's role on a resource
// (collab.RoleOwner or collab.RoleCollaborator). As a core fact
// (Facts.Members) it is the access a Resource item (its owner) or a
// Collaborator item gives; as a stored one (Facts.Grants) its Role is ""
// when the item at that key grants nothing (not an access item of that
// user, or no role).
type Access struct {
	ResourceType, ResourceID, UserID, Role string
}

// Resource names the access's resource: "goal g1".
func (a Access) Resource() string { return a.ResourceType + " " + a.ResourceID }

// Key names the access item: "goal g1 user alice" (a Difference's Key).
func (a Access) Key() string { return a.Resource() + " user " + a.UserID }

// resourceAccess compares the stored access items with the members the
// core items name. An owner is an owner even when they also collaborate; a
// Collaborator item of a resource whose Resource item is not there gives
// no access (the ordinary way answers 404 for it); a resource whose
// Resource item cannot be read (Facts.Unreadable) is not compared.
func resourceAccess(f *Facts) []Difference {
	owned := map[string]bool{}
	for _, m := range f.Members {
		if m.Role == collab.RoleOwner {
			owned[m.Resource()] = true
		}
	}
	want := map[string]Access{}
	for _, m := range f.Members {
		r := m.Resource()
		if f.Unreadable[r] || !owned[r] {
			continue
		}
		if cur, ok := want[m.Key()]; ok && cur.Role == collab.RoleOwner {
			continue
		}
		want[m.Key()] = m
	}
	got := map[string]Access{}
	for _, g := range f.Grants {
		if !f.Unreadable[g.Resource()] {
			got[g.Key()] = g
		}
	}
	role := func(a Access) string {
		if a.Role == "" {
			return "an item that grants nothing"
		}
		return a.Role
	}
	var out []Difference
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: w.Role, Got: "absent", Access: &w})
		case g.Role != w.Role:
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: w.Role, Got: role(g), Access: &w})
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: "absent", Got: role(g), Access: &g, Stray: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
