// Package app is the wiring the three programs share: the configuration
// they all have (Common, Runner: the table, the stream settings) read from
// the environment into validated structs, logging, and serving a stream
// handler either under Lambda or with the local stream runner. What one
// program alone reads is read in its own config.go (loadConfig), once,
// every problem named together; nothing else reads the environment.
package app
