package app

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
)

// The local stack's defaults (`make run`): the table devstack creates and
// the port its DynamoDB Local listens on. The operator commands use them
// when DYNAMODB_TABLE_NAME is not set.
const (
	LocalTable    = "search-room"
	LocalDynamoDB = 8000
)

// LocalEndpoint is the local stack's DynamoDB Local.
var LocalEndpoint = fmt.Sprintf("http://127.0.0.1:%d", LocalDynamoDB)

// Help prints usage on stdout and exits 0 when the program was asked for
// help (-h, -help, --help or help anywhere in its arguments), before it
// reads any configuration or starts anything.
func Help(usage string) {
	if slices.ContainsFunc(os.Args[1:], func(a string) bool {
		return a == "-h" || a == "-help" || a == "--help" || a == "help"
	}) {
		fmt.Print(usage)
		os.Exit(0)
	}
}

// LocalStackByDefault points an operator command at `make run`'s table when
// DYNAMODB_TABLE_NAME is not set, and at its DynamoDB Local when
// DYNAMODB_ENDPOINT is not set either; it returns what it did, for the log
// ("" when the environment names a table).
func LocalStackByDefault() string {
	if os.Getenv("DYNAMODB_TABLE_NAME") != "" || InLambda() {
		return ""
	}
	_ = os.Setenv("DYNAMODB_TABLE_NAME", LocalTable)
	if os.Getenv("DYNAMODB_ENDPOINT") == "" {
		_ = os.Setenv("DYNAMODB_ENDPOINT", LocalEndpoint)
	}
	return fmt.Sprintf("DYNAMODB_TABLE_NAME is not set: using make run's stack, table %s at %s (set DYNAMODB_TABLE_NAME, and DYNAMODB_ENDPOINT for a local one, to use another)",
		os.Getenv("DYNAMODB_TABLE_NAME"), os.Getenv("DYNAMODB_ENDPOINT"))
}

// Where says which DynamoDB a program uses, for its first log line: an
// operator who forgot DYNAMODB_ENDPOINT learns that it went to AWS.
func Where(c Common) string {
	if c.DB.Endpoint != "" {
		return fmt.Sprintf("table %s at %s", c.Table, c.DB.Endpoint)
	}
	region := c.DB.Region
	if region == "" {
		region = "the region of the AWS configuration"
	}
	return fmt.Sprintf("table %s in AWS (%s; DYNAMODB_ENDPOINT is not set)", c.Table, region)
}

// NothingToResubmit reports (and logs) that the program was asked to
// resubmit a dead-letter file that does not exist: there is nothing to do,
// and it should not start anything.
func NothingToResubmit(log *slog.Logger) bool {
	if len(os.Args) != 3 || os.Args[1] != "resubmit" || os.Args[2] == "table" {
		return false
	}
	if _, err := os.Stat(os.Args[2]); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	log.Info("nothing to resubmit: there is no dead-letter file", "file", os.Args[2])
	return true
}
