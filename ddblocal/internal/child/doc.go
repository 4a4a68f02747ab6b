// Package child starts the harness's helper processes (DynamoDB Local,
// moto_server) in a process group of their own and stops them: on Linux a
// child gets SIGKILL when this process dies (Pdeathsig), so none outlives
// a test binary or the local stack. (The application's internal/proc does
// the same for its own children; a library module imports nothing of the
// application's.)
package child
