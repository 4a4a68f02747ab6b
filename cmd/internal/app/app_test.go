package app

import "testing"

func TestExposed(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": false, "localhost:8080": false, "[::1]:8080": false, "127.0.0.2:1": false,
		":8080": true, "0.0.0.0:8080": true, "[::]:8080": true, "192.168.1.10:8080": true, "example.com:80": true, "nonsense": true,
	} {
		if got := Exposed(addr); got != want {
			t.Errorf("Exposed(%q) = %v, want %v", addr, got, want)
		}
	}
}
