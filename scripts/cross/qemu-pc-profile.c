/*
 * qemu-pc-profile: a QEMU TCG plugin that counts how often each guest instruction address is
 * executed, for scripts/cross/firmware-profile.sh (docs/CROSS.md, "Where a frame's instructions
 * go"). Built by scripts/install/qemu-insn-plugin.sh against the plugin header of the installed
 * qemu, beside QEMU's `insn` plugin.
 *
 * Written for surfcl after the pattern of QEMU's tests/plugin/insn.c (Emilio G. Cota) and
 * contrib/plugins/hotpages.c; like them: SPDX-License-Identifier: GPL-2.0-or-later.
 *
 * Arguments (-plugin libpc-profile.so,out=FILE[,on=HEX,off=HEX]):
 *   out  where to write the counts (required);
 *   on   the address where the measured window opens: the first time it executes, every
 *        counter is noted;
 *   off  the address where it closes: the first time it executes after `on`, every counter is
 *        noted again.
 * Output, one line per executed address: "ADDRESS(hex) WHOLE_RUN IN_WINDOW". Without on/off, or
 * when the window never closed, IN_WINDOW is the whole run's count.
 *
 * The counters are inline additions (no helper call per instruction), so the cost is that of
 * QEMU's `insn` plugin with inline=on. Single vCPU: the microcontroller machines have one core,
 * and the counters are not atomic.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* One guest instruction address: its executions, and the count at the window's edges. */
typedef struct {
    uint64_t vaddr;
    uint64_t executions;
    uint64_t at_on;
    uint64_t at_off;
} AddressCount;

typedef enum { WINDOW_NONE, WINDOW_WAITING, WINDOW_OPEN, WINDOW_CLOSED } WindowState;

static GHashTable *counts;
static char *out_path;
static uint64_t on_vaddr, off_vaddr;
static WindowState window = WINDOW_NONE;
/* Tags passed as callback data to tell the window's two edges apart. */
static int on_tag, off_tag;

static void note_on(gpointer key, gpointer value, gpointer unused)
{
    AddressCount *c = value;
    c->at_on = c->executions;
}

static void note_off(gpointer key, gpointer value, gpointer unused)
{
    AddressCount *c = value;
    c->at_off = c->executions;
}

/* Runs when an edge of the window executes. An address first translated inside the window has
 * at_on = 0, which is right: it had not executed before the window opened. */
static void window_edge(unsigned int vcpu_index, void *tag)
{
    if (tag == &on_tag && window == WINDOW_WAITING) {
        g_hash_table_foreach(counts, note_on, NULL);
        window = WINDOW_OPEN;
    } else if (tag == &off_tag && window == WINDOW_OPEN) {
        g_hash_table_foreach(counts, note_off, NULL);
        window = WINDOW_CLOSED;
    }
}

static void translate_block(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
        AddressCount *c = g_hash_table_lookup(counts, &vaddr);
        if (c == NULL) {
            c = g_new0(AddressCount, 1);
            c->vaddr = vaddr;
            g_hash_table_insert(counts, &c->vaddr, c);
        }
        /* A block can be translated again (the TB cache is flushed): the counter is per
         * address, so both translations add to the same one. */
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                   &c->executions, 1);
        if (window != WINDOW_NONE && (vaddr == on_vaddr || vaddr == off_vaddr)) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, window_edge, QEMU_PLUGIN_CB_NO_REGS,
                                                   vaddr == on_vaddr ? &on_tag : &off_tag);
        }
    }
}

static void write_count(gpointer key, gpointer value, gpointer file)
{
    AddressCount *c = value;
    uint64_t in_window = window == WINDOW_CLOSED ? c->at_off - c->at_on : c->executions;
    if (c->executions > 0) {
        fprintf(file, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", c->vaddr, c->executions,
                in_window);
    }
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
    FILE *file = fopen(out_path, "w");
    if (file == NULL) {
        perror(out_path);
        return;
    }
    if (window != WINDOW_NONE && window != WINDOW_CLOSED) {
        fprintf(stderr, "qemu-pc-profile: the window never %s; counts are of the whole run\n",
                window == WINDOW_WAITING ? "opened" : "closed");
    }
    g_hash_table_foreach(counts, write_count, file);
    fclose(file);
}

/* Parses "KEY=HEX" into *value; false when arg is not KEY's or its value is not hex. */
static bool parse_hex(const char *arg, const char *key, uint64_t *value)
{
    size_t len = strlen(key);
    char *end;
    if (strncmp(arg, key, len) != 0 || arg[len] != '=') {
        return false;
    }
    *value = g_ascii_strtoull(arg + len + 1, &end, 16);
    return end != arg + len + 1 && *end == '\0';
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    bool has_on = false, has_off = false;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = g_strdup(argv[i] + 4);
        } else if (parse_hex(argv[i], "on", &on_vaddr)) {
            has_on = true;
        } else if (parse_hex(argv[i], "off", &off_vaddr)) {
            has_off = true;
        } else {
            fprintf(stderr, "qemu-pc-profile: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (out_path == NULL || has_on != has_off) {
        fprintf(stderr, "qemu-pc-profile: needs out=FILE, and on=HEX with off=HEX or neither\n");
        return -1;
    }
    if (has_on) {
        window = WINDOW_WAITING;
    }
    counts = g_hash_table_new(g_int64_hash, g_int64_equal);
    qemu_plugin_register_vcpu_tb_trans_cb(id, translate_block);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
