package drift

import "sort"

// KindAccess is a resource member's access item (ACCESS#<userId> in the
// resource's partition): it must say what the Resource item's ownerId and
// the Collaborator items say, and no access item may be left over.
const KindAccess = "resource access"

// The roles of access items (the store writes these).
const (
	AccessOwner        = "owner"
	AccessCollaborator = "collaborator"
)

// Access is one access item: userID's role on a resource. As a core fact
// (Facts.Members) it is the access a Resource item (its owner) or a
// Collaborator item gives.
type Access struct {
	ResourceType, ResourceID, UserID, Role string
}

func (a Access) key() string { return a.ResourceType + " " + a.ResourceID + " user " + a.UserID }

// resourceAccess compares the stored access items with the members the
// core items name: an owner is an owner even when they also collaborate.
func resourceAccess(f *Facts) []Difference {
	want := map[string]Access{}
	for _, m := range f.Members {
		k := m.key()
		if cur, ok := want[k]; ok && cur.Role == AccessOwner {
			continue
		}
		want[k] = m
	}
	got := map[string]Access{}
	for _, g := range f.Grants {
		got[g.key()] = g
	}
	var out []Difference
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: w.Role, Got: "absent", Access: &w})
		case g.Role != w.Role:
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: w.Role, Got: g.Role, Access: &w, OldRole: g.Role})
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, Difference{Kind: KindAccess, Key: k, Want: "absent", Got: g.Role, Access: &g, OldRole: g.Role, Stray: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
