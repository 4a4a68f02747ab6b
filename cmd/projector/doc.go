// Command projector derives the table's derived items from its stream. In
// Lambda it is the function of the stream's event source mapping; locally
// it polls the stream with the same semantics (package stream).
//
// Subcommands (ordinary builds; a Lambda build, `make package`, serves the
// stream only):
//
//	projector resubmit FILE      hand dead-lettered records to the handler again
//	projector backfill [-segments N]
//	                             set the GSI1/GSI2 attributes of existing listings
//	                             (safe to re-run; prints progress)
//	projector quarantine [-segments N]
//	                             list stored items the programs cannot decode
//	projector verify [-segments N] [-recheck D] [-examples N] [-json]
//	                             check the derived items package drift covers
//	                             against the core items; exit 1 on differences
//	projector rebuild [-dry-run] [-announce] [-workers N] (and verify's flags)
//	                             repair what verify finds, each write conditioned
//	                             on what the scan read
//
// Long scans show a progress bar on a terminal and log a progress line a
// second otherwise.
package main
