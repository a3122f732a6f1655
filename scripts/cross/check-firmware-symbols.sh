#!/usr/bin/env bash
# Checks a firmware ELF for software floating-point routines that its variant must not need
# (issue 12), from its symbol table:
#
#   scripts/cross/check-firmware-symbols.sh ELF TARGET VARIANT
#
# - VARIANT=f32: no double-precision routine on any target (`__aeabi_d*`, `__adddf3`,
#   `__muldf3`, `__extendsfdf2`, ...). The core has no f64 at run time; on thumbv7em-none-eabihf
#   (single-precision FPU) each of these would be a soft-double call of tens of cycles.
# - VARIANT=fixed: no floating-point routine at all, single or double (`__aeabi_f*`,
#   `__aeabi_d*`, `__aeabi_[u]i2f`, `__addsf3`, `__mulsf3`, `__divsf3`, `__subsf3`, `__adddf3`,
#   comparisons `__*sf2`/`__*df2`, conversions `__float*`, `__fix*`, `__extend*`, `__trunc*`).
#
# Prints the offending symbols and exits 1 when there are any; exits 2 on a usage error or an
# unreadable ELF. Symbols are matched on their bare name (the last `::` segment of the demangled
# name), so compiler_builtins' Rust-mangled definitions count as well as the C-named aliases.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 ELF TARGET VARIANT   (VARIANT: f32 or fixed)" >&2
    exit 2
fi
elf=$1 target=$2 variant=$3

nm_tool=
for t in llvm-nm llvm-nm-22 nm; do
    if command -v "$t" >/dev/null 2>&1; then
        nm_tool=$t
        break
    fi
done
if [ -z "$nm_tool" ]; then
    echo "$0: no nm found (llvm-nm or binutils)" >&2
    exit 2
fi
if [ ! -r "$elf" ]; then
    echo "$0: cannot read $elf" >&2
    exit 2
fi

# Double precision: the ARM EABI helpers and the generic libgcc/compiler-builtins names.
double='^__aeabi_(d[a-z0-9]*|[a-z0-9]*2d|[a-z0-9]*2dz)$|^__[a-z]+df[0-9]$|^__[a-z]+dfsi$|^__[a-z]+dfdi$|^__[a-z]+dfti$|^__float[a-z]*df$|^__fix[a-z]*df[a-z]*$|^__extendsfdf2$|^__truncdfsf2$|^__powidf2$'
# Single precision likewise, and every float conversion.
single='^__aeabi_(f[a-z0-9]*|[a-z0-9]*2f|[a-z0-9]*2fz)$|^__[a-z]+sf[0-9]$|^__[a-z]+sfsi$|^__[a-z]+sfdi$|^__[a-z]+sfti$|^__float[a-z]*$|^__fix[a-z]*$|^__extend[a-z0-9]*$|^__trunc[a-z0-9]*$|^__powisf2$'

case "$variant" in
    f32) pattern=$double; what="double-precision soft-float" ;;
    fixed) pattern="$double|$single"; what="soft-float" ;;
    *)
        echo "$0: unknown VARIANT '$variant' (f32 or fixed)" >&2
        exit 2
        ;;
esac

if ! symbols=$("$nm_tool" -C "$elf" 2>/dev/null); then
    echo "$0: $nm_tool cannot read $elf" >&2
    exit 2
fi
if [ -z "$symbols" ]; then
    echo "$0: $elf has no symbols (stripped?): nothing can be checked" >&2
    exit 2
fi

# The (demangled) name is field 3 onwards (field 2 for undefined symbols, which have no
# address); keep the bare name after the last `::`.
offending=$(printf '%s\n' "$symbols" |
    awk '{ first = ($1 ~ /^[UvwV]$/) ? 2 : 3
           if (NF < first) next
           name = $first; for (i = first + 1; i <= NF; i++) name = name " " $i; print name }' |
    sed -e 's/.*:://' -e 's/[[:space:]].*//' |
    grep -E "$pattern" | sort -u || true)

if [ -n "$offending" ]; then
    count=$(printf '%s\n' "$offending" | wc -l)
    echo "$elf ($target, $variant): $count $what symbol(s):"
    printf '  %s\n' $offending
    exit 1
fi
echo "$elf ($target, $variant): no $what symbols"
