// Package repo holds the checks that span the repository's modules, which
// no library module may make (a module's tests read only its own files, so
// that they pass in a user's module cache): docs/library.md's code against the
// tests it quotes, fixtures copied into two modules against each other, and
// the Makefile's versions against the code's. It has no code of its own.
package repo
