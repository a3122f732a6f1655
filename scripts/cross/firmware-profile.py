#!/usr/bin/env python3
"""Where the example firmware's instructions go: attributes the per-address execution counts of
scripts/cross/qemu-pc-profile.c to pipeline stages, symbols and core source lines, through the
ELF's debug information (`addr2line -i`, so code inlined into a function counts for the function
it came from). Called by scripts/cross/firmware-profile.sh (docs/CROSS.md, "Where a frame's
instructions go"); python3's standard library and binutils' addr2line only.

  firmware-profile.py window ELF
      prints "ON OFF" (hex): the first instructions of the firmware's inlined `count::start`
      and `count::stop`, the edges of the window whose instructions `make firmware-count` prints.
  firmware-profile.py report ELF COUNTS FIRMWARE_INSTRUCTIONS [TOP]
      prints the tables; COUNTS has "ADDRESS WHOLE_RUN IN_WINDOW" lines (the plugin's output),
      FIRMWARE_INSTRUCTIONS is the firmware's own count (0 when unknown).
"""
import bisect
import collections
import re
import struct
import subprocess
import sys

WINDOW_START = "surfcl_firmware::count::start"
WINDOW_STOP = "surfcl_firmware::count::stop"

# Stages, first match wins: a pattern is looked for in every function of an address's inline
# chain (innermost to the real symbol). Specific before general: haar_map::fill_rows is
# description, not the Hessian fill; the band driver (push_row) inlines the integral row and
# calls everything else, so it comes last.
STAGES = [
    ("orientation", ("orientation", "atan2")),
    ("describe", ("describe", "haar")),
    ("scan (NMS)", ("scan_interval_rows", "::scan::")),
    ("refine / to_frame", ("to_frame", "refine", "interpolate")),
    ("fill (Hessian responses)", ("::fill_", "fill_rows", "surf::response::")),
    ("band/map moves, clears (mem*)", ("drop_rows", "memmove", "memcpy", "memset", "memclr",
                                       "copy_forward", "copy_backward")),
    ("row reads (PGM, semihosting)", ("pgm::", "semihosting")),
    ("integral rows", ("integral", "push_row")),
]
OTHER = "other"
# The table's order: the pipeline's.
PIPELINE_ORDER = ["row reads (PGM, semihosting)", "integral rows", "fill (Hessian responses)",
                  "scan (NMS)", "refine / to_frame", "orientation", "describe",
                  "band/map moves, clears (mem*)", OTHER]

HASH_SUFFIX = re.compile(r"::h[0-9a-f]{16}$")
# Generic arguments: a <...> group right after a name or `::` (not a qualified path's opening <).
GENERIC_ARGS = re.compile(r"(?:::)?(?<=[\w>:])<[^<>]*>")


def executable_ranges(elf):
    """(start, end) of each executable section of a 32- or 64-bit little-endian ELF."""
    with open(elf, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[5] != 1:
        raise SystemExit(f"firmware-profile: {elf} is not a little-endian ELF")
    if data[4] == 1:
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
        fields = "<IIIIIIIIII"
    else:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        fields = "<IIQQQQIIQQ"
    ranges = []
    for i in range(shnum):
        _, kind, flags, addr, _, size, *_ = struct.unpack_from(fields, data, shoff + i * shentsize)
        executable = flags & 0x4
        if kind == 1 and executable and size > 0:  # SHT_PROGBITS
            ranges.append((addr, addr + size))
    return ranges


def symbol_table(elf):
    """(sorted start addresses, names) of the ELF's code symbols, from nm; Thumb bit cleared."""
    listing = subprocess.run(["nm", "-n", "-C", "--defined-only", elf], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    starts, names = [], []
    for line in listing:
        parts = line.split(" ", 2)
        # Mapping symbols ($t, $d, $x) mark code or data, they name nothing.
        if len(parts) == 3 and parts[1] in "tTwW" and not parts[2].startswith("$"):
            starts.append(int(parts[0], 16) & ~1)
            names.append(parts[2])
    return starts, names


def inline_chains(elf, addresses):
    """{address: [(function, location), ...]}, innermost frame first, from addr2line -i. Code
    without debug information (assembly, C builtins) is named by its symbol."""
    if not addresses:
        return {}
    starts, names = symbol_table(elf)
    command = ["addr2line", "-a", "-i", "-f", "-C", "-e", elf]
    text = "\n".join(f"0x{a:x}" for a in addresses)
    lines = subprocess.run(command, input=text, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    chains, current, i = {}, None, 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            current = chains.setdefault(int(lines[i], 16), [])
            i += 1
            continue
        location = lines[i + 1] if i + 1 < len(lines) else "??:0"
        current.append((HASH_SUFFIX.sub("", lines[i]), short_location(location)))
        i += 2
    for address, chain in chains.items():
        k = bisect.bisect_right(starts, address) - 1
        for i, (function, location) in enumerate(chain):
            if k >= 0 and (function == "??" or function.startswith("$")):
                chain[i] = (HASH_SUFFIX.sub("", names[k]), location)
    return chains


def short_location(location):
    """A source location relative to the workspace or Rust's library, without discriminators."""
    location = re.sub(r" \(discriminator \d+\)$", "", location)
    location = re.sub(r"^.*/rustlib/src/rust/library/", "rust/", location)
    return re.sub(r"^/.*/((core|embedded)/src/)", r"\1", location)


def short_function(name, width=90):
    """A function name without generic arguments, cut from the left to `width` characters."""
    previous = None
    while previous != name:
        previous = name
        name = re.sub(r"<([\w:]+)>::", r"\1::", GENERIC_ARGS.sub("", name))
    return name if len(name) <= width else "..." + name[-(width - 3):]


def window(elf):
    """The first address of the inlined window start and stop (both run once per frame)."""
    addresses = [a for lo, hi in executable_ranges(elf) for a in range(lo & ~1, hi, 2)]
    chains = inline_chains(elf, addresses)
    edges = []
    for marker in (WINDOW_START, WINDOW_STOP):
        found = [a for a in addresses if any(f.startswith(marker) for f, _ in chains.get(a, []))]
        if not found:
            raise SystemExit(f"firmware-profile: no code of {marker} in {elf}")
        edges.append(min(found))
    print(f"{edges[0]:x} {edges[1]:x}")


def stage_of(chain):
    names = [f for f, _ in chain]
    for stage, patterns in STAGES:
        if any(p in n for n in names for p in patterns):
            return stage
    return OTHER


def core_line(chain):
    """The innermost frame in the workspace's own code, else the innermost frame."""
    for function, location in chain:
        if location.startswith(("core/", "embedded/")):
            return location
    return chain[0][1] if chain else "??"


def table(title, counter, total, top):
    print(f"\n{title}")
    print(f"{'instructions':>14} {'share':>7}  what")
    for key, n in counter.most_common(top):
        print(f"{n:>14,} {100 * n / total:>6.1f}%  {key}")


def report(elf, counts_path, firmware_count, top):
    rows = []
    with open(counts_path) as f:
        for line in f:
            address, whole, in_window = line.split()
            rows.append((int(address, 16), int(whole), int(in_window)))
    chains = inline_chains(elf, [a for a, _, n in rows if n > 0])
    whole_run = sum(w for _, w, _ in rows)
    total = sum(n for _, _, n in rows)
    if total == 0:
        raise SystemExit("firmware-profile: no instruction counted in the window")
    stages, symbols, lines, others = (collections.Counter() for _ in range(4))
    for address, _, n in rows:
        if n == 0:
            continue
        chain = chains.get(address) or [("??", "??")]
        stage = stage_of(chain)
        stages[stage] += n
        symbols[short_function(chain[-1][0])] += n
        lines[core_line(chain)] += n
        if stage == OTHER:
            others[short_function(chain[-1][0])] += n
    print(f"plugin, whole run:            {whole_run:>14,}")
    print(f"plugin, firmware's window:    {total:>14,}")
    if firmware_count:
        print(f"firmware's own count:         {firmware_count:>14,}  "
              f"(window - own = {total - firmware_count:+,}, "
              f"{100 * (total - firmware_count) / firmware_count:+.4f}%)")
    print(f"\n{'stage':<30} {'instructions':>14} {'share':>7}")
    for stage in PIPELINE_ORDER:
        n = stages[stage]
        print(f"{stage:<30} {n:>14,} {100 * n / total:>6.1f}%")
    print(f"{'total':<30} {total:>14,} {100.0:>6.1f}%")
    table(f"'other', by symbol (top {top})", others, total, top)
    table(f"By symbol, inlined code in its caller (top {top})", symbols, total, top)
    table(f"By source line, innermost line of core/ or embedded/ (top {top})", lines, total, top)


def main(argv):
    if len(argv) == 3 and argv[1] == "window":
        window(argv[2])
    elif len(argv) in (5, 6) and argv[1] == "report":
        report(argv[2], argv[3], int(argv[4]), int(argv[5]) if len(argv) == 6 else 15)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
