#!/usr/bin/env bash
# Builds QEMU's instruction-counting TCG plugin (`insn`, QEMU's tests/plugin/insn.c by Emilio G.
# Cota, GPL-2.0-or-later) for the qemu-user installed here, from the Debian source package of
# exactly that qemu version: its plugin header (include/qemu/qemu-plugin.h) declares the plugin
# API version that this qemu accepts. Used by scripts/cross/insn-check.sh (docs/CROSS.md).
#   usage: scripts/install/qemu-insn-plugin.sh [OUT_DIR]   (default target-cross/qemu-plugins)
# Prints the plugin's path on the last line. Skips the build when OUT_DIR already has the plugin
# for this qemu version. The source package comes through apt with a private configuration: the
# machine's own apt sources turned into deb-src entries, in a temporary folder (the system's apt
# configuration is not changed). Installs gcc, pkg-config, libglib2.0-dev (insn.c uses GLib) and
# xz-utils when missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

out_dir=${1:-target-cross/qemu-plugins}
plugin="$out_dir/libinsn.so"
stamp="$out_dir/libinsn.qemu-version"

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

version=$(dpkg-query -W -f='${source:Version}' qemu-user 2>/dev/null || true)
if [ -z "$version" ]; then
    echo "qemu-insn-plugin: qemu-user is not installed (scripts/install/cross.sh installs it)" >&2
    exit 2
fi
if [ -f "$plugin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "qemu-insn-plugin: up to date for qemu $version" >&2
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
mkdir -p "$out_dir"
# shellcheck disable=SC2046 # pkg-config prints several flags
gcc -O2 -Wall -shared -fPIC -I "$(dirname "$work/src/$header")" $(pkg-config --cflags glib-2.0) \
    -o "$plugin.tmp" "$work/src/$source" $(pkg-config --libs glib-2.0)
mv "$plugin.tmp" "$plugin"
echo "$version" >"$stamp"
echo "qemu-insn-plugin: built $plugin (plugin API version $api, qemu $version)" >&2
echo "$plugin"
