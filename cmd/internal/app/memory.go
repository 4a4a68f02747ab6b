package app

// Memory is a program's memory, beside its CPU seconds in /metrics: the Go
// heap's live objects after the last collection (what a leak grows; 0
// until the first collection), all
// the memory the Go runtime holds, and the process's resident set (what the
// machine, or Lambda's memory limit, sees).
type Memory struct {
	HeapLiveBytes uint64 `json:"heapLiveBytes"`
	GoBytes       uint64 `json:"goBytes"`
	// RSSBytes is 0 where the platform does not tell (it is read from
	// /proc/self/statm).
	RSSBytes uint64 `json:"rssBytes"`
	// RSSAnonBytes and RSSFileBytes split the resident set (from
	// /proc/self/status; 0 where it does not tell): the memory the program
	// allocated, and the file-backed pages it maps (its binary's and the
	// shared libraries' code and read-only data), which grow as code runs
	// for the first time, up to the files' size.
	RSSAnonBytes uint64 `json:"rssAnonBytes,omitempty"`
	RSSFileBytes uint64 `json:"rssFileBytes,omitempty"`
	Goroutines   int    `json:"goroutines"`
}
