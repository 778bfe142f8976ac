.DEFAULT_GOAL := help

.PHONY: help demo test dist lint fuzz bench

help: ## Show the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-6s %s\n", $$1, $$2}'

demo: ## Build everything and run the demo (naive sink hangs, pylogsink completes)
	scripts/demo.sh

test: ## Build everything and run all tests on every CPython 3.11-3.15 (Debian's where missing)
	scripts/test.sh

dist: ## Build the sdist, the manylinux_2_28 wheels (abi3, and one per CPython 3.12+ found) and the win_amd64 abi3 wheel into dist/
	scripts/dist.sh

lint: ## Layer check of the crate's src/, actionlint on .github/workflows, cargo fmt --check and clippy (the workspace and the PyO3 example; for macOS and Windows too)
	python3 scripts/check_layers.py
	scripts/lint_workflows.sh
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --all-features -- -D warnings
	cd examples/pyo3-extension && cargo fmt -- --check && cargo clippy --all-targets -- -D warnings
	scripts/lint_platforms.sh

fuzz: ## Long escaping checks: 100M inputs against CPython, then cargo fuzz (nightly)
	scripts/fuzz.sh

bench: ## Build and run the benchmark (SPEC figures side by side); QUICK=1 for a smoke run, gated against bench/baseline.json
	bench/build.sh
	.venv/bin/python bench/run.py $(if $(QUICK),--quick --gate)
