// Package app is the wiring the three programs share: configuration read
// from the environment into validated structs (the only place the
// environment is read), logging, and serving a stream handler either under
// Lambda or with the local stream runner.
package app
