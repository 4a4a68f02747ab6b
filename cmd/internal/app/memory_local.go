//go:build !lambda.norpc

package app

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"

	"github.com/dynastream/dynastream/consumer"
)

// ReadMemory reads the program's memory now.
func ReadMemory() Memory {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	m := Memory{Goroutines: runtime.NumGoroutine(), RSSBytes: consumer.ResidentMemory()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.HeapLiveBytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		m.GoBytes = s[1].Value.Uint64()
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		m.RSSAnonBytes, m.RSSFileBytes = statusKB(b, "RssAnon:"), statusKB(b, "RssFile:")
	}
	return m
}

// statusKB is the value of a /proc/<pid>/status line such as
// "RssAnon: 1234 kB", in bytes; 0 if there is none or it is malformed.
func statusKB(status []byte, field string) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(field))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil || n > 1<<44 { // 16 PiB: n<<10 cannot overflow
			return 0
		}
		return n << 10
	}
	return 0
}
