// Command projector derives the table's derived items from its stream. In
// Lambda it is the function of the stream's event source mapping; locally
// it polls the stream with the same semantics (package stream).
//
// Subcommands:
//
//	projector resubmit FILE      hand dead-lettered records to the handler again
//	projector backfill [-segments N]
//	                             set the GSI1/GSI2 attributes of existing listings
//	                             (safe to re-run; prints progress)
package main
