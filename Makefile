# Two entry points for a fresh Debian/Ubuntu machine with a Rust toolchain (root or sudo):
#   make demo   the main job: detect + match on the Oxford boat pair on OpenCL (PoCL without a GPU)
#   make test   every test: unit, integration (CPU vs OpenCL on PoCL), CLI, ROS 2 interop with an
#               independent DDS peer, the no_std link check, the fuzzers' saved crash inputs
#               replayed (stable toolchain only)
# Each installs what it is missing first (scripts/install-deps.sh).

CARGO ?= cargo
OUT ?= out
BOAT := data/oxford-boat

.PHONY: demo test fuzz deps deps-test build nostd-check soak fmt-check clippy ci

deps:
	scripts/install-deps.sh

deps-test:
	scripts/install-deps.sh --test

build: deps
	$(CARGO) build --release -p surfcl-gpu

demo: build
	@mkdir -p $(OUT)
	target/release/surfcl devices || true
	target/release/surfcl detect $(BOAT)/img1.pgm --draw $(OUT)/boat1-keypoints.png
	target/release/surfcl match $(BOAT)/img1.pgm $(BOAT)/img2.pgm \
		--homography $(BOAT)/H1to2p --draw $(OUT)/boat1-2-matches.png --json $(OUT)/boat1-2-matches.json
	@echo "wrote $(OUT)/boat1-keypoints.png, $(OUT)/boat1-2-matches.png and $(OUT)/boat1-2-matches.json"

# The fuzzers' saved crash inputs and seeds are replayed here on stable
# (tests/tests/robustness_regressions.rs); new fuzzing is `make fuzz`.
test: deps-test
	$(CARGO) test --workspace
	$(MAKE) nostd-check

# Coverage-guided fuzzing (nightly toolchain + cargo-fuzz, both installed by scripts/fuzz.sh when
# missing): FUZZ_SECONDS per target (longer campaigns: FUZZ_SECONDS=600).
FUZZ_SECONDS ?= 20
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# 2000 frames at 30 Hz through the ROS node, resident-memory growth bound, and latency (~100 s).
soak:
	$(CARGO) test -p surfcl-ros --release --test soak_latency -- --ignored --nocapture --test-threads 1

# Links surfcl-core into a #![no_std] staticlib with its own panic handler (fails if std sneaks
# in), then proves the check can fail by linking std on purpose.
nostd-check:
	$(CARGO) build --manifest-path nostd-check/Cargo.toml
	@if $(CARGO) build -q --manifest-path nostd-check/Cargo.toml --features prove-failure 2>/dev/null; then \
		echo "nostd-check: linking std on purpose did not fail: the check is broken" >&2; exit 1; \
	else echo "nostd-check: ok (surfcl-core links without std; a std link is caught)"; fi

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

ci: test fmt-check clippy
