# Hermes Operator — `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
export PRISMA_HIDE_UPDATE_MESSAGE := 1
export CHECKPOINT_DISABLE := 1
# `prisma generate` needs no schema engine, but the CLI insists that one exists: point it at any file.
export PRISMA_SCHEMA_ENGINE_BINARY := $(firstword $(wildcard /usr/bin/true /bin/true))
# Steps that print `export` lines to eval. A failing `$(…)` inside `a && b` does not stop a recipe
# under `set -e`, so the output goes to a variable first: a failing assignment does stop it.
SERVICES_SH ?= hack/services.sh
KUBE_DEV_SH ?= hack/kube/dev-env.sh
SERVICES := services_env=$$($(SERVICES_SH) up); eval "$$services_env"
KUBE_DEV := kube_env=$$($(KUBE_DEV_SH) up); eval "$$kube_env"
KUBE_BUILD := hack/kube/build.sh >/dev/null
K8S ?= 0

##@ General
.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run
.PHONY: dev
dev: deps system-deps ## Start the whole system locally (Postgres, Redis, gateway + worker); K8S=1 also starts a kube-apiserver and runs the operator against it
	@own=; [ -n "$${DATABASE_URL:-}" ] || own=Postgres; [ -n "$${REDIS_URL:-}" ] || own="$${own:+$$own and }Redis"; \
	$(SERVICES); \
	if [ -n "$$own" ]; then echo "[dev] Ctrl-C leaves this checkout's $$own running (under .hermes/, data kept); make services-down ends that" >&2; fi; \
	if [ "$(K8S)" = 1 ]; then $(KUBE_DEV); fi; \
	node bin/hermes.js dev $(if $(filter 1,$(K8S)),--k8s,)

.PHONY: services
services: ## Start this checkout's Postgres and Redis (only those whose URL is unset); prints export lines
	@$(SERVICES_SH) up

.PHONY: services-down
services-down: ## Stop this checkout's Postgres and Redis
	@$(SERVICES_SH) down

.PHONY: services-status
services-status: ## This checkout's ports, where its Postgres and Redis keep their data, what runs
	@$(SERVICES_SH) status

.PHONY: migrate
migrate: deps ## Apply database migrations
	@$(SERVICES); node bin/hermes.js migrate

##@ Build and check
.PHONY: deps
deps: node_modules/.installed services/core/generated/prisma/client.ts ## Install npm packages and generate the Prisma client (idempotent)

node_modules/.installed: package.json package-lock.json
	@echo "[deps] npm ci…" >&2
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

services/core/generated/prisma/client.ts: prisma/schema.prisma node_modules/.installed
	@echo "[deps] prisma generate…" >&2
	@npx prisma generate --schema prisma/schema.prisma >/dev/null
	@touch $@

.PHONY: system-deps
system-deps: ## Install missing Debian packages (redis-server, bubblewrap, openssl)
	@hack/system-deps.sh

.PHONY: lint
lint: deps ## ESLint (complexity, floating promises, dependency direction)
	@npx eslint .

.PHONY: crds
crds: deps ## Generate crds/*.yaml from the zod API in operator/api
	@npm run --silent crds

.PHONY: chart-docs
chart-docs: deps ## Generate charts/hermes/values.schema.json and the README values table from charts/hermes/values.yaml
	@node --import tsx hack/chart/docs.ts

.PHONY: typecheck
typecheck: deps ## TypeScript strict typecheck
	@npx tsc --noEmit -p tsconfig.json

.PHONY: kube
kube: ## Build (or reuse) kube-apiserver + etcd and unpack kubectl + helm into .cache/ (needs Go)
	@$(KUBE_BUILD)

.PHONY: kube-down
kube-down: ## Stop the dev kube-apiserver + etcd started by `make dev K8S=1`
	@hack/kube/dev-env.sh down

##@ Test
.PHONY: test
test: deps system-deps ## Everything CI runs: lint, typecheck, unit + integration tests on real Postgres, Redis and kube-apiserver
	@$(MAKE) --no-print-directory lint typecheck
	@$(KUBE_BUILD)
	@$(SERVICES); hack/test.sh

.PHONY: chaos
chaos: deps system-deps ## Fault-injection suite at full scale (200 worker SIGKILLs, a 30 s Postgres outage, 10 000 fuzzed requests, …): prints the table. SCALE=bounded, ONLY=worker-kill,fuzz, SEED=n
	@$(SERVICES); node --import tsx test/chaos/run.ts --scale $(or $(SCALE),full) $(if $(ONLY),--only $(ONLY)) $(if $(SEED),--seed $(SEED))

.PHONY: bench
bench: deps system-deps kube ## Every benchmark (not part of `make test`), each against raw baselines of the same run: turns, bubblewrap, Pod per call, mode session warm vs cold, the learning loop, Slack ingress, the Kanban dispatcher, the CronJob scheduler
	@$(SERVICES); hack/bench.sh

.PHONY: bench-turns
bench-turns: deps ## Turn benchmark only: turns/s and latency against raw Postgres/BullMQ baselines, the agent loop
	@$(SERVICES); npm run --silent bench

.PHONY: bench-learning
bench-learning: deps ## Learning-loop benchmark: prompt build and size with 200 skills, session_search over 100 000 messages vs a raw to_tsvector query (BENCH_SCALE scales it)
	@$(SERVICES); node --import tsx bench/learning.ts

.PHONY: bench-slack
bench-slack: deps ## Slack ingress benchmark: signed events at increasing rates to one gateway, accepted rate and p50/p99 ack latency next to the raw Postgres commit
	@$(SERVICES); npm run --silent bench:slack

.PHONY: bench-kanban
bench-kanban: deps ## Kanban benchmark: the dispatcher's tick over 10 000 tasks (first, idle, reclaim) next to a raw scan and a raw CAS claim of the same run (BENCH_SCALE scales it)
	@$(SERVICES); node --import tsx bench/kanban.ts

.PHONY: bench-cron
bench-cron: deps ## CronJob scheduler benchmark: 10 000 CronJobs of mixed schedules, scheduler CPU per tick and dispatch lag p99 at the minute boundary next to a raw Postgres baseline (BENCH_SCALE scales it)
	@$(SERVICES); node --import tsx bench/cron.ts

.PHONY: bench-sandbox
bench-sandbox: deps ## Sandbox benchmark: the bubblewrap backend's per-call overhead on `true` next to raw spawn and raw bwrap
	@npm run --silent bench:sandbox

.PHONY: bench-sandbox-kubernetes
bench-sandbox-kubernetes: deps kube ## Kubernetes sandbox benchmark: per-call overhead of a Pod per call vs the raw Pod create→Succeeded→delete
	@npm run --silent bench:sandbox-kubernetes

.PHONY: bench-sandbox-session
bench-sandbox-session: deps kube ## Mode session benchmark: a new session's first command, warm pool vs cold start, vs a raw Pod and raw pods/exec
	@node --import tsx bench/sandbox-session.ts

.PHONY: bench-operator
bench-operator: deps kube ## Operator benchmark: 1000 Agents + 1000 Skills on a real kube-apiserver (BENCH_SCALE scales it)
	@$(SERVICES); npm run --silent bench:operator
