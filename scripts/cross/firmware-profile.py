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

Runtime-library routines (compiler-builtins: 64-bit multiplies and shifts, division, soft
float, mem*) are called out of line from every stage, so their inline chain says nothing of the
caller. Their instructions go to the stages of their call sites (found with llvm-objdump), in
proportion to how often each call site ran (its count is the number of calls): exact for
routines of constant cost, an estimate for the others (division, soft float). Without
llvm-objdump they stay a row of their own.
"""
import bisect
import collections
import glob
import re
import shutil
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
    ("refine / to_frame", ("to_frame", "refine", "exact_cube")),
    ("orientation", ("orientation", "atan2")),
    ("describe", ("describe", "haar")),
    ("scan (NMS)", ("scan_interval_rows", "::scan::")),
    ("fill (Hessian responses)", ("::fill_", "fill_rows", "surf::response::")),
    ("band/map moves, clears (mem*)", ("drop_rows", "memmove", "memcpy", "memset", "memclr",
                                       "copy_forward", "copy_backward")),
    ("row reads (PGM, semihosting)", ("pgm::", "semihosting")),
    ("integral rows", ("integral", "push_row")),
]
OTHER = "other"
LIBRARY = "runtime library (callers unknown)"
# Routines of the runtime library, by the name of the symbol that holds them.
LIBRARY_SYMBOL = re.compile(r"^(__|compiler_builtins::)")
# A call with its target: Arm bl/blx/b.w (tail calls), RISC-V jal/j (tail calls).
DIRECT_CALL = re.compile(r"^\s*([0-9a-f]+):\s+(?:bl|blx|b\.w|b|jal|j)\s+(?:ra,\s*)?0x([0-9a-f]+)\b")
# RISC-V far calls: auipc REG, HI then jalr [ra,] LO(REG).
AUIPC = re.compile(r"^\s*([0-9a-f]+):\s+auipc\s+(\w+),\s*(0x[0-9a-f]+|\d+)")
JALR = re.compile(r"^\s*([0-9a-f]+):\s+jalr\s+(?:\w+,\s*)?(-?\d+)\((\w+)\)")
# The table's order: the pipeline's.
PIPELINE_ORDER = ["row reads (PGM, semihosting)", "integral rows", "fill (Hessian responses)",
                  "scan (NMS)", "refine / to_frame", "orientation", "describe",
                  "band/map moves, clears (mem*)", OTHER, LIBRARY]

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
    """Prints the lowest address of the code inlined from the window's start and from its stop
    (both run once per frame). The lowest is the entry when the code is laid out in order, as
    LLVM does for these straight-line functions; an edge that never runs makes the plugin warn
    and count the whole run, which the report's window - own line then shows."""
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
    """The first stage of STAGES with a pattern in a function name of the inline chain."""
    names = [f for f, _ in chain]
    for stage, patterns in STAGES:
        if any(p in n for n in names for p in patterns):
            return stage
    return OTHER


def find_objdump():
    """llvm-objdump on PATH, else the newest versioned one of Debian's LLVM packages."""
    found = shutil.which("llvm-objdump")
    if found:
        return found
    versions = glob.glob("/usr/lib/llvm-*/bin/llvm-objdump")
    versions.sort(key=lambda p: int(re.search(r"llvm-(\d+)", p).group(1)))
    return versions[-1] if versions else None


def call_sites(elf, objdump):
    """[(call instruction's address, target address)] of the direct and auipc+jalr calls."""
    listing = subprocess.run([objdump, "-d", "--no-show-raw-insn", elf], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    sites, upper = [], {}
    for line in listing:
        m = DIRECT_CALL.match(line)
        if m:
            sites.append((int(m.group(1), 16), int(m.group(2), 16)))
            continue
        m = AUIPC.match(line)
        if m:
            upper[m.group(2)] = int(m.group(1), 16) + (int(m.group(3), 0) << 12)
            continue
        m = JALR.match(line)
        if m and m.group(3) in upper:
            sites.append((int(m.group(1), 16), (upper.pop(m.group(3)) + int(m.group(2))) & 0xFFFFFFFF))
    return sites


def spread_library(elf, own, counts, chains, starts):
    """Stages' shares of the runtime library's instructions: {stage: instructions (float)}.
    `own` maps a routine's symbol start to its instructions; a call site inside another
    routine passes its share on to that routine's callers."""
    objdump = find_objdump()
    if objdump is None:
        print("firmware-profile: no llvm-objdump; runtime library calls stay unattributed",
              file=sys.stderr)
        return {LIBRARY: float(sum(own.values()))}
    callers = collections.defaultdict(list)
    for site, target in call_sites(elf, objdump):
        k = bisect.bisect_right(starts, target) - 1
        if k >= 0 and starts[k] == target & ~1 and counts.get(site, 0) > 0:
            callers[starts[k]].append(site)
    shares = collections.Counter()
    pending = {r: float(n) for r, n in own.items()}
    # Routines call routines a few levels deep at most (__aeabi_lmul -> __muldi3).
    for _ in range(8):
        passed_on = collections.Counter()
        for routine, amount in pending.items():
            calls = sum(counts[s] for s in callers[routine])
            if calls == 0:
                shares[LIBRARY] += amount
                continue
            for site in callers[routine]:
                part = amount * counts[site] / calls
                k = bisect.bisect_right(starts, site) - 1
                if k >= 0 and starts[k] in own:
                    passed_on[starts[k]] += part
                else:
                    shares[stage_of(chains.get(site) or [("??", "??")])] += part
        pending = passed_on
        if not pending:
            break
    shares[LIBRARY] += sum(pending.values())
    return shares


def rounded(shares, total):
    """Integer parts of `shares` that add up to `total` (largest remainders round up)."""
    floors = {k: int(v) for k, v in shares.items()}
    rest = total - sum(floors.values())
    for k in sorted(shares, key=lambda k: shares[k] - floors[k], reverse=True)[:max(rest, 0)]:
        floors[k] += 1
    return floors


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
    counts = {a: n for a, _, n in rows if n > 0}
    chains = inline_chains(elf, list(counts))
    starts, names = symbol_table(elf)
    whole_run = sum(w for _, w, _ in rows)
    total = sum(counts.values())
    if total == 0:
        raise SystemExit("firmware-profile: no instruction counted in the window")
    stages, symbols, lines, others, library = (collections.Counter() for _ in range(5))
    for address, n in counts.items():
        chain = chains.get(address) or [("??", "??")]
        stage = stage_of(chain)
        k = bisect.bisect_right(starts, address) - 1
        if stage == OTHER and k >= 0 and LIBRARY_SYMBOL.match(names[k]):
            library[starts[k]] += n
        else:
            stages[stage] += n
        symbols[short_function(chain[-1][0])] += n
        lines[core_line(chain)] += n
        if stage == OTHER:
            others[short_function(chain[-1][0])] += n
    library_shares = spread_library(elf, library, counts, chains, starts)
    combined = rounded({s: stages[s] + library_shares.get(s, 0.0) for s in PIPELINE_ORDER}, total)
    library_part = rounded({s: library_shares.get(s, 0.0) for s in PIPELINE_ORDER},
                           sum(library.values()))
    print(f"plugin, whole run:            {whole_run:>14,}")
    print(f"plugin, firmware's window:    {total:>14,}")
    if firmware_count:
        print(f"firmware's own count:         {firmware_count:>14,}  "
              f"(window - own = {total - firmware_count:+,}, "
              f"{100 * (total - firmware_count) / firmware_count:+.4f}%)")
    print(f"\n{'stage':<34} {'instructions':>14} {'share':>7} {'of which runtime library':>26}")
    for stage in PIPELINE_ORDER:
        n = combined[stage]
        print(f"{stage:<34} {n:>14,} {100 * n / total:>6.1f}% {library_part[stage]:>26,}")
    print(f"{'total':<34} {total:>14,} {100.0:>6.1f}% {sum(library.values()):>26,}")
    table(f"'other' and the runtime library, by symbol (top {top})", others, total, top)
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
