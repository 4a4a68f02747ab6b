package moto_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/dynastream/dynastream/ddblocal/moto"
)

// A server answers on its endpoint until it is stopped, and says what it
// logged.
func TestServerAnswersUntilStopped(t *testing.T) {
	s, err := moto.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.Endpoint + "/moto-api/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.Config().Region == "" || *s.Config().BaseEndpoint != s.Endpoint {
		t.Errorf("config %+v does not name the server", s.Config())
	}
	if s.Output() == "" {
		t.Error("no output kept (moto_server logs every request)")
	}
	s.Stop()
	if resp, err := http.Get(s.Endpoint + "/moto-api/"); err == nil {
		resp.Body.Close()
		t.Fatal("the server still answers after Stop")
	}
	s.Stop() // again: nothing left to stop
}

// Without moto_server on PATH, Start and Installed say so, with how to
// install it.
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if err := moto.Installed(); !errors.Is(err, moto.ErrNotInstalled) {
		t.Errorf("Installed: %v", err)
	}
	if _, err := moto.Start(context.Background()); !errors.Is(err, moto.ErrNotInstalled) {
		t.Errorf("Start: %v, want ErrNotInstalled", err)
	}
}

// A start given up (its context ended) fails, and stops what it began.
func TestStartGivenUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := moto.Start(ctx); err == nil {
		s.Stop()
		t.Fatal("Start with an ended context started a server")
	}
}

func ExampleForTest() {
	var t testing.T // in a test: its *testing.T
	m := moto.ForTest(&t)
	_ = m.Config() // for kinesis.NewFromConfig, sqs.NewFromConfig, …
}
