package stream

import "strings"

// position is a shard's checkpoint value, as a Checkpoints store keeps it
// (DESIGN.md, The checkpoint value); parsePosition and String are its one
// decoder and encoder:
//
//	""              no checkpoint: the shard is read from StartingPosition
//	"<seq>"         every record up to seq is finished
//	"<seq>\n<state>" and a windowed consumer's open windows' state after it
//	                (Windows.StateAt, JSON)
//	"SHARD_END"     every record of the shard is finished
//
// TableCheckpoints keeps a large value in chunks of its own (chunks.go);
// that is the store's business, not the value's.
type position struct {
	seq   string // "" with end, or with no checkpoint
	state string // a windowed consumer's; "" for others
	end   bool
}

// shardEnd marks a shard whose records have all been delivered.
const shardEnd = "SHARD_END"

// parsePosition reads a checkpoint value.
func parsePosition(v string) position {
	if v == shardEnd {
		return position{end: true}
	}
	seq, state, _ := strings.Cut(v, "\n")
	return position{seq: seq, state: state}
}

// String is the checkpoint value of p.
func (p position) String() string {
	switch {
	case p.end:
		return shardEnd
	case p.state == "":
		return p.seq
	}
	return p.seq + "\n" + p.state
}
