// Package proc starts and stops the child processes of the local tools
// (DynamoDB Local, the local stack's programs) the same way on every
// platform: in a process group of their own, stopped as a group, and on
// Linux killed with their parent (Pdeathsig) so none outlives a test
// binary or the stack. Elsewhere a child whose parent was killed (not
// stopped) can outlive it. It also tells whether a process still runs (a
// lease holder on this host).
package proc
