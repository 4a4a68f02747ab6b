package eventbus

import "testing"

// BenchmarkChunk10000 is the chunking alone: 10,000 entry sizes cut into
// calls of at most 10 entries and 256 KB.
func BenchmarkChunk10000(b *testing.B) {
	sizes := make([]int, 10_000)
	pending := make([]int, len(sizes))
	for i := range sizes {
		sizes[i] = 200 + (i*7919)%3000
		if i%50 == 0 {
			sizes[i] = 120_000
		}
		pending[i] = i
	}
	b.ReportAllocs()
	calls := 0
	for b.Loop() {
		calls = 0
		for start := 0; start < len(pending); calls++ {
			start = nextChunk(pending, sizes, start, MaxEntriesLimit, DefaultMaxBytes)
		}
	}
	b.ReportMetric(float64(calls), "calls/op")
}

func TestNextChunk(t *testing.T) {
	sizes := []int{5, 5, 5, 10, 1, 1}
	pending := []int{0, 1, 2, 3, 4, 5}
	var got []int
	for start := 0; start < len(pending); {
		end := nextChunk(pending, sizes, start, 3, 10)
		got = append(got, end-start)
		start = end
	}
	want := []int{2, 1, 1, 2} // 5+5 | 5 (+10 > 10) | 10 | 1+1
	if len(got) != len(want) {
		t.Fatalf("chunks %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("chunks %v, want %v", got, want)
		}
	}
}
