#!/usr/bin/env bash
# Builds QEMU's instruction-counting TCG plugin (`insn`, QEMU's tests/plugin/insn.c by Emilio G.
# Cota, GPL-2.0-or-later) for the qemu-user installed here, from the Debian source package of
# exactly that qemu version: its plugin header (include/qemu/qemu-plugin.h) declares the plugin
# API version that this qemu accepts. Used by scripts/cross/insn-check.sh (docs/CROSS.md).
# Beside it, against the same header (kept in OUT_DIR/include), the per-address counting plugin
# scripts/cross/qemu-pc-profile.c as libpc-profile.so, for scripts/cross/firmware-profile.sh.
#   usage: scripts/install/qemu-insn-plugin.sh [OUT_DIR]   (default target-cross/qemu-plugins)
# Prints libpc-profile.so's path, then the insn plugin's on the last line. Skips the download
# when OUT_DIR already has the insn plugin and the header for this qemu version; rebuilds
# libpc-profile.so when its source is newer. The source package comes through apt with a private configuration: the
# machine's own apt sources turned into deb-src entries, in a temporary folder (the system's apt
# configuration is not changed). Installs gcc, pkg-config, libglib2.0-dev (insn.c uses GLib) and
# xz-utils when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

out_dir=${1:-target-cross/qemu-plugins}
plugin="$out_dir/libinsn.so"
stamp="$out_dir/libinsn.qemu-version"
header_dir="$out_dir/include"
pc_source=scripts/cross/qemu-pc-profile.c
pc_plugin="$out_dir/libpc-profile.so"

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

version=$(dpkg-query -W -f='${source:Version}' qemu-user 2>/dev/null || true)
if [ -z "$version" ]; then
    echo "qemu-insn-plugin: qemu-user is not installed (scripts/install/cross.sh installs it)" >&2
    exit 2
fi
# Compiles one plugin source against the header in $header_dir: SOURCE OUTPUT.
build_plugin() {
    # shellcheck disable=SC2046 # pkg-config prints several flags
    gcc -O2 -Wall -shared -fPIC -I "$header_dir" $(pkg-config --cflags glib-2.0) \
        -o "$2.tmp" "$1" $(pkg-config --libs glib-2.0)
    mv "$2.tmp" "$2"
}

if [ -f "$plugin" ] && [ -f "$header_dir/qemu-plugin.h" ] &&
    [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    if [ ! "$pc_plugin" -nt "$pc_source" ]; then
        build_plugin "$pc_source" "$pc_plugin"
        echo "qemu-insn-plugin: built $pc_plugin" >&2
    fi
    echo "qemu-insn-plugin: up to date for qemu $version" >&2
    echo "$pc_plugin"
    echo "$plugin"
    exit 0
fi

missing=()
for p in gcc pkg-config libglib2.0-dev xz-utils; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "qemu-insn-plugin: installing ${missing[*]}" >&2
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -q
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/parts" "$work/lists/partial" "$work/src"
: >"$work/sources.list"
# The machine's binary sources as source entries: one-line files ("deb [opts] uri suite ...")
# and deb822 files ("Types: deb").
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$work/parts/from-list.list"
done
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed 's/^Types:.*/Types: deb-src/' "$f" >"$work/parts/$(basename "$f")"
done
apt_private=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root")
echo "qemu-insn-plugin: fetching the source of qemu $version" >&2
apt-get "${apt_private[@]}" update -q >&2
(cd "$work/src" && apt-get "${apt_private[@]}" source --download-only -q "qemu=$version" >&2)

orig=$(ls "$work"/src/qemu_*.orig.tar.* | head -n 1)
header=$(tar -tf "$orig" | grep -E '^[^/]+/include/qemu/qemu-plugin\.h$' | head -n 1)
# tests/plugin/ up to QEMU 8.1, tests/tcg/plugins/ after.
source=$(tar -tf "$orig" | grep -E '^[^/]+/tests/(plugin|tcg/plugins)/insn\.c$' | head -n 1)
if [ -z "$header" ] || [ -z "$source" ]; then
    echo "qemu-insn-plugin: $orig has no qemu-plugin.h or insn.c" >&2
    exit 1
fi
tar -xf "$orig" -C "$work/src" "$header" "$source"
# Debian's own patches to these two files, if any, as the installed qemu was built with them.
debian=$(ls "$work"/src/qemu_*.debian.tar.* 2>/dev/null | head -n 1 || true)
if [ -n "$debian" ]; then
    tar -xf "$debian" -C "$work/src"
    top="$work/src/${header%%/*}"
    while read -r patch; do
        patch="$work/src/debian/patches/$patch"
        if [ -f "$patch" ] && grep -qE '^\+\+\+ .*(qemu-plugin\.h|plugins?/insn\.c)' "$patch"; then
            echo "qemu-insn-plugin: applying $(basename "$patch")" >&2
            patch -d "$top" -p1 --forward -s <"$patch" >&2 || true
        fi
    done < <(grep -v '^#' "$work/src/debian/patches/series" 2>/dev/null || true)
fi

api=$(sed -n 's/^#define QEMU_PLUGIN_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$work/src/$header")
mkdir -p "$header_dir"
cp "$work/src/$header" "$header_dir/qemu-plugin.h"
build_plugin "$work/src/$source" "$plugin"
build_plugin "$pc_source" "$pc_plugin"
echo "$version" >"$stamp"
echo "qemu-insn-plugin: built $plugin and $pc_plugin (plugin API version $api, qemu $version)" >&2
echo "$pc_plugin"
echo "$plugin"
