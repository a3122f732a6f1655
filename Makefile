# Two entry points for a fresh Debian/Ubuntu machine with a Rust toolchain (root or sudo):
#   make demo   the main job: detect + match on the Oxford boat pair on OpenCL (PoCL without a GPU)
#   make test   every test: unit, integration (CPU vs OpenCL on PoCL), CLI, ROS 2 interop with an
#               independent DDS peer, the no_std link check, the fuzzers' saved crash inputs
#               replayed (stable toolchain only)
# Each installs what it is missing first (scripts/install-deps.sh).

CARGO ?= cargo
OUT ?= out
BOAT := data/oxford-boat

.PHONY: demo test fuzz deps deps-test build nostd-check structure-check soak fmt-check clippy ci

deps:
	scripts/install-deps.sh

deps-test:
	scripts/install-deps.sh --test

build: deps
	$(CARGO) build --release -p surfcl-cli

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
	$(CARGO) test -p surfcl-gpu --no-default-features --test without_libopencl
	$(MAKE) nostd-check
	$(MAKE) structure-check

# The shape rules of docs/ARCHITECTURE.md: no import circle between the files of a crate, and no
# function over 120 lines outside tests and kernels (80 in the ROS node).
structure-check:
	@for c in core gpu-runner cli ros-node; do python3 scripts/test/import-circles.py $$c/src || exit 1; done
	python3 scripts/test/long-functions.py core/src gpu-runner/src cli/src
	python3 scripts/test/long-functions.py --max 80 ros-node/src

# Coverage-guided fuzzing (nightly toolchain + cargo-fuzz, both installed by scripts/test/fuzz.sh when
# missing): FUZZ_SECONDS per target (longer campaigns: FUZZ_SECONDS=600).
FUZZ_SECONDS ?= 20
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/test/fuzz.sh

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

# ---- Cross builds: Jetson-class aarch64 boards and microcontrollers (docs/CROSS.md) -----------
# Debian's Rust 1.96 (rustc-web) is used explicitly: rustup here cannot add targets or rust-src,
# and -Zbuild-std needs library sources of exactly the compiler's version. scripts/install/cross.sh
# installs it and the rest (arm64 multiarch, qemu) when missing.
CROSS_CARGO := PATH=/usr/bin:$$PATH RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc /usr/bin/cargo
# Bare-metal targets build `core` from source (stable compiler, so the bootstrap switch).
MCU_CARGO := RUSTC_BOOTSTRAP=1 $(CROSS_CARGO)
CROSS_DIR := $(CURDIR)/target-cross
MCU_TARGETS := thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imc-unknown-none-elf
LINUX_CROSS := aarch64-unknown-linux-gnu
TARGET ?= thumbv7em-none-eabihf
VARIANT ?= f32
IMAGE ?= data/boat-qvga/img1.pgm
# RAM of the firmware's memory map: 256K (an nRF52840) or 192K (an STM32F4).
MEMORY ?= 256K
FIRMWARE_FEATURES = $(if $(filter-out f32,$(VARIANT)),$(VARIANT)) $(if $(filter 192K,$(MEMORY)),ram192k)
FIRMWARE_ELF = $(CROSS_DIR)/firmware/$(TARGET)-$(VARIANT)$(if $(filter 192K,$(MEMORY)),-192k).elf

.PHONY: deps-cross cross cross-mcu cross-linux firmware firmware-run firmware-count firmware-profile \
	cross-test

deps-cross:
	scripts/install/cross.sh

# surfcl-core (through nostd-check, a no_std staticlib) and the example firmware for each
# microcontroller target; `surfcl` and `surfcl-node` for aarch64 Linux.
cross: cross-mcu cross-linux

cross-mcu: deps-cross
	@for t in $(MCU_TARGETS); do \
		echo "== nostd-check and firmware for $$t"; \
		$(MCU_CARGO) build --release --locked --manifest-path nostd-check/Cargo.toml \
			--target $$t -Zbuild-std=core --target-dir $(CROSS_DIR) || exit 1; \
		$(MAKE) --no-print-directory firmware TARGET=$$t VARIANT=f32 || exit 1; \
		$(MAKE) --no-print-directory firmware TARGET=$$t VARIANT=fixed || exit 1; \
		$(MAKE) --no-print-directory firmware TARGET=$$t VARIANT=f32 MEMORY=192K || exit 1; \
		$(MAKE) --no-print-directory firmware TARGET=$$t VARIANT=fixed MEMORY=192K || exit 1; \
	done

cross-linux: deps-cross
	$(CROSS_CARGO) build --release --locked --target $(LINUX_CROSS) --target-dir $(CROSS_DIR) \
		-p surfcl-cli --no-default-features --bins
	cp $(CROSS_DIR)/$(LINUX_CROSS)/release/surfcl $(CROSS_DIR)/$(LINUX_CROSS)/surfcl-cpu-only
	$(CROSS_CARGO) build --release --locked --target $(LINUX_CROSS) --target-dir $(CROSS_DIR) \
		-p surfcl-cli -p surfcl-ros --bins
	@ls -l $(CROSS_DIR)/$(LINUX_CROSS)/release/surfcl $(CROSS_DIR)/$(LINUX_CROSS)/release/surfcl-node \
		$(CROSS_DIR)/$(LINUX_CROSS)/surfcl-cpu-only

# One firmware ELF: make firmware TARGET=thumbv6m-none-eabi [VARIANT=f32|fixed] [MEMORY=256K|192K]
# (fixed: integer-only detection, orientation and Q7 descriptors, for parts without an FPU)
firmware: deps-cross
	$(MCU_CARGO) build --release --locked --manifest-path embedded/Cargo.toml --target $(TARGET) \
		-Zbuild-std=core --target-dir $(CROSS_DIR) $(if $(strip $(FIRMWARE_FEATURES)),--features "$(strip $(FIRMWARE_FEATURES))")
	@mkdir -p $(CROSS_DIR)/firmware
	cp $(CROSS_DIR)/$(TARGET)/release/surfcl-firmware $(FIRMWARE_ELF)
	@size -A $(FIRMWARE_ELF) | awk '/^\.(vector_table|text|rodata|data) / { flash += $$2 } \
		/^\.(data|bss) / { ram += $$2 } \
		END { printf "firmware %s: flash (vectors + .text + .rodata + .data) %d bytes, statics (.data + .bss) %d bytes\n", "$(TARGET)-$(VARIANT)-$(MEMORY)", flash, ram }'

# Runs the firmware once under qemu: make firmware-run TARGET=... IMAGE=file.pgm [VARIANT=f32]
firmware-run: firmware
	scripts/cross/firmware-run.sh $(TARGET) $(FIRMWARE_ELF) $(IMAGE)

# Instructions per frame, deterministic: qemu -icount shift=0 (one instruction per virtual ns)
firmware-count: firmware
	QEMU_EXTRA="-icount shift=0" scripts/cross/firmware-run.sh $(TARGET) $(FIRMWARE_ELF) $(IMAGE)

# Where those instructions go: per stage, symbol and core source line, from a QEMU plugin's
# per-address counts (docs/CROSS.md). make firmware-profile TARGET=... [VARIANT=...] [IMAGE=...]
firmware-profile: firmware
	CROSS_DIR=$(CROSS_DIR) scripts/cross/firmware-profile.sh $(TARGET) $(FIRMWARE_ELF) $(IMAGE)

# Firmware under qemu on every MCU target and the aarch64 CLI under qemu-aarch64, each compared
# with the x86 CPU backend on the same image.
cross-test: cross
	$(CARGO) build -p surfcl-cli --bin surfcl
	CROSS_DIR=$(CROSS_DIR) HOST_SURFCL=target/debug/surfcl IMAGE=$(IMAGE) scripts/cross/test.sh
	CROSS_DIR=$(CROSS_DIR) IMAGE=$(IMAGE) scripts/cross/insn-check.sh
