/* Unit tests of the .traceg parser in plain C: handwritten lines for every address mode and tracer
 * version, identical results for every way of cutting the input into chunks, and a file:line error
 * (never a crash) for malformed and truncated input. */
#include <stdlib.h>

#include "check.h"
#include "trace/check.h"
#include "trace/traceg.h"

typedef struct parsed {
    int rc;
    gcx_error err;
    gcx_traceg_header header;
    gcx_traceg_columns cols;
    uint32_t n_opcodes;
    char opcodes[8][32];
} parsed;

/* Parse `len` bytes of `text` fed in chunks of `chunk` bytes (0: all at once). */
static parsed parse_n(const char *text, size_t len, size_t chunk, unsigned options)
{
    parsed r;
    memset(&r, 0, sizeof r);
    gcx_opcodes ops;
    gcx_traceg p;
    CHECK_EQ(gcx_opcodes_init(&ops, &r.err), GCX_OK);
    CHECK_EQ(gcx_traceg_init(&p, "k.traceg", &ops, options, &r.err), GCX_OK);
    size_t step = chunk ? chunk : (len ? len : 1);
    r.rc = GCX_OK;
    for (size_t at = 0; at < len && r.rc == GCX_OK; at += step)
        r.rc = gcx_traceg_feed(&p, text + at, at + step < len ? step : len - at, &r.err);
    if (r.rc == GCX_OK)
        r.rc = gcx_traceg_finish(&p, &r.err);
    if (r.rc == GCX_OK) {
        r.header = p.header;
        r.header.kernel_name = r.header.nvbit_version = NULL;
        gcx_traceg_take_columns(&p, &r.cols);
    }
    r.n_opcodes = ops.count;
    for (uint32_t i = 0; i < ops.count && i < 8; i++)
        snprintf(r.opcodes[i], sizeof r.opcodes[i], "%s", ops.names[i]);
    gcx_traceg_free(&p);
    gcx_opcodes_free(&ops);
    return r;
}

static parsed parse(const char *text, size_t chunk, unsigned options)
{
    return parse_n(text, strlen(text), chunk, options);
}

static void release(parsed *r) { gcx_traceg_columns_free(&r->cols); }

static int same_columns(const gcx_traceg_columns *a, const gcx_traceg_columns *b)
{
    size_t n = a->n_insts;
    if (n != b->n_insts || a->n_addresses != b->n_addresses)
        return 0;
    if (n == 0)
        return 1;
    return !memcmp(a->cta, b->cta, n * 4) && !memcmp(a->warp, b->warp, n * 2) && !memcmp(a->pc, b->pc, n * 4) &&
           !memcmp(a->opcode, b->opcode, n * 2) && !memcmp(a->mask, b->mask, n * 4) &&
           !memcmp(a->width, b->width, n) && !memcmp(a->dst, b->dst, n * GCX_TRACEG_MAX_DST) &&
           !memcmp(a->src, b->src, n * GCX_TRACEG_MAX_SRC) && !memcmp(a->addr_offset, b->addr_offset, n * 8) &&
           (a->n_addresses == 0 || !memcmp(a->addresses, b->addresses, a->n_addresses * 8));
}

#define HEADER_V4(grid, block)                                                                                   \
    "-kernel name = _Z3fooPf\n-kernel id = 7\n-grid dim = " grid "\n-block dim = " block "\n-shmem = 256\n"      \
    "-nregs = 30\n-binary version = 61\n-cuda stream id = 0\n-shmem base_addr = 0x00007f2b5a000000\n"            \
    "-local mem base_addr = 0x00007f2b58000000\n-nvbit version = 1.5.5\n-accelsim tracer version = 4\n"         \
    "-enable lineinfo = 0\n\n#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num "          \
    "[reg_srcs] mem_width [adrrescompress?] [mem_addresses]\n\n\n"

/* Two CTAs of 64 threads; every address mode; mask-0 lines; RZ. */
static const char *const small_v4 =
    HEADER_V4("(2,1,1)", "(64,1,1)")
    "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 4\n"
    "0008 ffffffff 1 R1 MOV 0 0 \n"
    "0098 0000000f 1 R4 LDG.E.CG 1 R4 4 1 0x7f2b2d500000 4 \n"
    "00a0 00000005 0 STG.E 2 R2 R255 8 2 0x1000 -16 \n"
    "00b0 00000000 1 R7 LDG.E 1 R4 4 1 0x0 0 \n"
    "\nwarp = 1\ninsts = 2\n"
    "00c0 80000001 0 ST.E.64 2 R6 R8 8 0 0x10 0xffffffffffffffff \n"
    "00d0 00000000 0 EXIT 0 0 \n"
    "\n#END_TB\n\n#BEGIN_TB\n\nthread block = 1,0,0\n\nwarp = 0\ninsts = 1\n"
    "0008 ffffffff 1 R1 MOV 0 0 \n\nwarp = 1\ninsts = 0\n\n#END_TB\n";

static void test_small_v4(void)
{
    parsed r = parse(small_v4, 0, 0);
    CHECK_EQ(r.rc, GCX_OK);
    if (r.rc) {
        fprintf(stderr, "%s\n", r.err.msg);
        return;
    }
    gcx_traceg_columns *k = &r.cols;
    CHECK_EQ(k->n_insts, 7);
    CHECK_EQ(r.header.grid[0], 2);
    CHECK_EQ(r.header.block[0], 64);
    CHECK_EQ(r.header.shmem, 256);
    CHECK_EQ(r.header.nregs, 30);
    CHECK_EQ(r.header.kernel_id, 7);
    CHECK_EQ(r.header.tracer_version, 4);
    CHECK_EQ(r.header.shmem_base, 0x00007f2b5a000000ull);
    uint32_t cta[] = {0, 0, 0, 0, 0, 0, 1}, warp[] = {0, 0, 0, 0, 1, 1, 0};
    uint32_t pc[] = {8, 0x98, 0xa0, 0xb0, 0xc0, 0xd0, 8};
    uint8_t width[] = {0, 4, 8, 4, 8, 0, 0};
    uint64_t offs[] = {0, 0, 4, 6, 6, 8, 8};
    for (int i = 0; i < 7; i++) {
        CHECK_EQ(k->cta[i], cta[i]);
        CHECK_EQ(k->warp[i], warp[i]);
        CHECK_EQ(k->pc[i], pc[i]);
        CHECK_EQ(k->width[i], width[i]);
        CHECK_EQ(k->addr_offset[i], offs[i]);
    }
    CHECK_EQ(r.n_opcodes, 6); /* MOV LDG.E.CG STG.E LDG.E ST.E.64 EXIT; MOV again in CTA 1 */
    CHECK_EQ(k->opcode[0], k->opcode[6]);
    CHECK(strcmp(r.opcodes[k->opcode[1]], "LDG.E.CG") == 0);
    /* registers: R255 is RZ = no register; missing operands are NO_REG */
    CHECK_EQ(k->dst[0], 1);
    CHECK_EQ(k->dst[1], GCX_TRACEG_NO_REG);
    CHECK_EQ(k->src[2 * GCX_TRACEG_MAX_SRC + 0], 2);
    CHECK_EQ(k->src[2 * GCX_TRACEG_MAX_SRC + 1], GCX_TRACEG_NO_REG);
    CHECK_EQ(k->src[4 * GCX_TRACEG_MAX_SRC + 1], 8);
    /* mode 1: base + k * stride; mode 2: base then deltas from the previous active lane; mode 0: list */
    uint64_t want[] = {0x7f2b2d500000, 0x7f2b2d500004, 0x7f2b2d500008, 0x7f2b2d50000c, 0x1000, 0xff0, 0x10,
                       0xffffffffffffffffull};
    CHECK_EQ(k->n_addresses, 8);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(k->addresses[i], want[i]);
    release(&r);
}

static void test_every_chunking_gives_the_same_columns(void)
{
    parsed whole = parse(small_v4, 0, 0);
    CHECK_EQ(whole.rc, GCX_OK);
    size_t len = strlen(small_v4);
    for (size_t chunk = 1; chunk <= len; chunk += chunk < 40 ? 1 : 37) {
        parsed r = parse(small_v4, chunk, 0);
        CHECK_EQ(r.rc, GCX_OK);
        CHECK(same_columns(&whole.cols, &r.cols));
        release(&r);
    }
    release(&whole);
}

static void test_address_modes_edge_cases(void)
{
    /* Mode 1 over a non-contiguous mask: the k-th active lane gets base + k * stride. Mode 2 with
     * wrap-around deltas. Mode 0 with 32 lanes. */
    static const char text[] = HEADER_V4("(1,1,1)", "(32,1,1)")
        "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 3\n"
        "0010 00010010 0 LDG.E 1 R2 4 1 0x100 -4\n"
        "0020 00000007 0 LDG.E 1 R2 4 2 0x0 -1 2\n"
        "0030 ffffffff 0 LDG.E 1 R2 4 0 0x0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9 0xa 0xb 0xc 0xd 0xe 0xf 0x10 "
        "0x11 0x12 0x13 0x14 0x15 0x16 0x17 0x18 0x19 0x1a 0x1b 0x1c 0x1d 0x1e 0x1f\n"
        "#END_TB\n";
    parsed r = parse(text, 0, 0);
    CHECK_EQ(r.rc, GCX_OK);
    if (r.rc) {
        fprintf(stderr, "%s\n", r.err.msg);
        return;
    }
    CHECK_EQ(r.cols.n_addresses, 2 + 3 + 32);
    CHECK_EQ(r.cols.addresses[0], 0x100);
    CHECK_EQ(r.cols.addresses[1], 0xfc);
    CHECK_EQ(r.cols.addresses[2], 0);
    CHECK_EQ(r.cols.addresses[3], UINT64_MAX);
    CHECK_EQ(r.cols.addresses[4], 1);
    for (int i = 0; i < 32; i++)
        CHECK_EQ(r.cols.addresses[5 + i], i);
    CHECK_EQ(r.cols.addr_offset[2], 5);
    release(&r);
}

static void test_legacy_lineinfo_and_v5(void)
{
    static const char legacy[] = "-kernel name = k\n-grid dim = (1,2,1)\n-block dim = (32,1,1)\n\n#traces\n"
                                 "#BEGIN_TB\nthread block = 0,1,0\nwarp = 0\ninsts = 2\n"
                                 "0 1 0 0 0010 ffffffff 1 R3 LDS.U.128 1 R2 16 1 0x40 16\n"
                                 "0 1 0 0 0020 ffffffff 0 EXIT 0 0\n#END_TB\n";
    parsed r = parse(legacy, 7, GCX_TRACEG_ALLOW_MISSING_CTAS);
    CHECK_EQ(r.rc, GCX_OK);
    CHECK_EQ(r.header.tracer_version, 0);
    CHECK_EQ(r.cols.n_insts, 2);
    CHECK_EQ(r.cols.cta[0], 1); /* x + y * gx */
    CHECK_EQ(r.cols.addresses[31], 0x40 + 31 * 16);
    release(&r);

    static const char v5_lineinfo[] =
        "-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 5\n-enable lineinfo = 1\n#\n"
        "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
        "12 0010 00000003 0 STG.E 2 R2 R3 4 2 0x40 8 -1\n"
        "13 0020 ffffffff 0 EXIT 0 0 0\n#END_TB\n";
    r = parse(v5_lineinfo, 5, 0);
    CHECK_EQ(r.rc, GCX_OK);
    CHECK_EQ(r.cols.n_addresses, 2);
    CHECK_EQ(r.cols.addresses[1], 0x48);
    release(&r);
}

static void test_rows_sorted_by_cta_and_warp(void)
{
    static const char text[] = HEADER_V4("(2,2,1)", "(64,1,1)")
        "#BEGIN_TB\nthread block = 1,1,0\nwarp = 1\ninsts = 1\n0010 00000001 0 LDG.E 1 R2 4 1 0x30 0\n"
        "warp = 0\ninsts = 1\n0020 00000001 0 LDG.E 1 R2 4 1 0x20 0\n#END_TB\n"
        "#BEGIN_TB\nthread block = 0,1,0\nwarp = 0\ninsts = 2\n0030 00000001 0 LDG.E 1 R2 4 1 0x10 0\n"
        "0040 00000000 0 EXIT 0 0\n#END_TB\n"
        "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n0050 00000001 0 EXIT 0 0\n#END_TB\n"
        "#BEGIN_TB\nthread block = 1,0,0\nwarp = 0\ninsts = 1\n0060 00000001 0 EXIT 0 0\n#END_TB\n";
    parsed r = parse(text, 0, 0);
    CHECK_EQ(r.rc, GCX_OK);
    uint32_t cta[] = {0, 1, 2, 2, 3, 3}, warp[] = {0, 0, 0, 0, 0, 1}, pc[] = {0x50, 0x60, 0x30, 0x40, 0x20, 0x10};
    uint64_t offs[] = {0, 0, 0, 1, 1, 2};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(r.cols.cta[i], cta[i]);
        CHECK_EQ(r.cols.warp[i], warp[i]);
        CHECK_EQ(r.cols.pc[i], pc[i]);
        CHECK_EQ(r.cols.addr_offset[i], offs[i]);
    }
    CHECK_EQ(r.cols.addresses[0], 0x10);
    CHECK_EQ(r.cols.addresses[1], 0x20);
    CHECK_EQ(r.cols.addresses[2], 0x30);
    release(&r);
}

typedef struct bad_case {
    const char *body; /* instruction lines of warp 0 of a 1-CTA, 64-thread kernel, or a whole file */
    const char *message;
} bad_case;

static void check_error_n(const char *text, size_t len, const char *message)
{
    parsed r = parse_n(text, len, 3, 0);
    CHECK(r.rc == GCX_ERR_TRACE);
    if (!strstr(r.err.msg, message)) {
        gcx_check_failures++;
        fprintf(stderr, "expected an error containing \"%s\", got \"%s\"\n", message, r.err.msg);
    }
    release(&r);
}

static void check_error(const char *text, const char *message) { check_error_n(text, strlen(text), message); }

/* A minimal version 4 header of 4 lines. */
#define MINI(grid, block) "-grid dim = " grid "\n-block dim = " block "\n-accelsim tracer version = 4\n#\n"

static void test_errors_name_file_and_line(void)
{
    /* The instruction is on line 22 of the file (17 header lines, then #BEGIN_TB, thread block, warp, insts). */
    static const bad_case lines[] = {
        {"00zz ffffffff 0 EXIT 0 0\n", "k.traceg:22: expected a hexadecimal PC, found '00zz'"},
        {"0010 fffffffff1 0 EXIT 0 0\n", "k.traceg:22: active mask 0xfffffffff1 has more than 32 lanes"},
        {"0010 ffffffff 2 R1 MOV 0 0\n", "k.traceg:22: expected 2 destination registers, found 1 (then 'MOV')"},
        {"0010 ffffffff 1 R1 R2 MOV 0 0\n", "expected 1 destination registers, found more ('R2' where the opcode"},
        {"0010 ffffffff 3 R1 R2 R3 MOV 0 0\n", "3 destination registers; at most 2 are supported"},
        {"0010 ffffffff 0 IADD 4 R1 R2 0\n", "k.traceg:22: expected 4 source registers, found 2 (then '0')"},
        {"0010 ffffffff 0 IADD 1 R1 R2 0\n", "expected 1 source registers, found more ('R2' where the memory width"},
        {"0010 ffffffff 0 IADD 6 R1 R2 R3 R4 R5 R6 0\n", "6 source registers; at most 5 are supported"},
        {"0010 ffffffff 1 R300 MOV 0 0\n", "register 'R300' is out of range"},
        {"0010 ffffffff 0 LDG.E 1 R2 4 3 0x10 4\n", "unknown address mode 3"},
        {"0010 ffffffff 0 LDG.E 1 R2 300 1 0x10 4\n", "memory width 300 bytes per lane is not an access size"},
        {"0010 ffffffff 0 LDG.E 1 R2 12 1 0x10 4\n", "memory width 12 bytes per lane is not an access size"},
        {"0010 00000007 0 LDG.E 1 R2 4 0 0x10 0x14\n", "expected 3 addresses (one per active lane), found 2"},
        {"0010 00000007 0 LDG.E 1 R2 4 0 0x10 0x14 0xq\n", "expected a hexadecimal address, found '0xq'"},
        {"0010 00000007 0 LDG.E 1 R2 4 2 0x10 4\n", "expected 2 address deltas (active lanes - 1), found 1"},
        {"0010 00000007 0 LDG.E 1 R2 4 2 0x10 4 4 4\n", "unexpected '4' after the end of the instruction"},
        {"0010 00000007 0 LDG.E 1 R2 4 1 0x10\n", "expected a decimal address stride, found the end of the line"},
        {"0010 00000007 0 LDG.E 1 R2 4 1 0x10000000000000000 4\n", "expected a hexadecimal base address"},
        {"0010 00000007 0 LDG.E 1 R2 4\n", "expected an address mode (0, 1 or 2) after the memory width"},
        {"0010 ffffffff 0 EXIT 0\n", "expected the memory width in bytes (decimal), found the end of the line"},
        {"0010 ffffffff 0 3XIT 0 0\n", "expected an opcode, found '3XIT'"},
        {"0010 ffffffff 0 EXIT 0 0 7\n", "unexpected '7' after the end of the instruction"},
        {"0010 ffffffff 0 EXIT 0 0\n0020 ffffffff 0 EXIT 0 0\n", "k.traceg:23: warp 0 of thread block (0,0,0) "
                                                                 "declares 1 instructions (line 21) but has more"},
        {"\xff\xfe\x00junk\n", "k.traceg:22: expected a hexadecimal PC, found '\\xff\\xfe\\x00junk'"},
    };
    char text[4096];
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        int n = snprintf(text, sizeof text, "%s#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n",
                         HEADER_V4("(1,1,1)", "(64,1,1)"));
        size_t body = strlen(lines[i].body);
        if (lines[i].body[0] == '\xff')
            body = 9; /* the embedded NUL */
        memcpy(text + n, lines[i].body, body);
        int tail = snprintf(text + n + body, sizeof text - n - body, "#END_TB\n");
        check_error_n(text, (size_t)n + body + (size_t)tail, lines[i].message);
    }

    static const bad_case files[] = {
        {"", "k.traceg:0: the file ends in its header"},
        {"-grid dim = (1,1,1)\n-block dim = (32,1,1)\n", "k.traceg:2: the file ends in its header"},
        {"-grid dim = (1,1)\n", "k.traceg:1: header 'grid dim' must be (x,y,z), found '(1,1)'"},
        {"-grid dim = (0,1,1)\n", "grid dim (0,1,1): dimension x must be 1 to 2147483647"},
        {"-grid dim = (2147483647,65535,3)\n", "more than the 2^32 a trace can number"},
        {"-block dim = (1024,4,1)\n", "block dim (1024,4,1) has 4096 threads"},
        {"-nregs = 9999\n", "header 'nregs' = 9999 is out of range (at most 255)"},
        {"-shmem = 99999999999999999999999\n", "header 'shmem' must be a decimal number"},
        {"-accelsim tracer version = 9\n", "accelsim tracer version 9 is not supported"},
        {"-grid dim = (1,1,1)\n#\n", "k.traceg:2: the header has no '-block dim = (x,y,z)' line"},
        {"hello\n", "k.traceg:1: expected a '-key = value' header line"},
        {MINI("(1,1,1)", "(32,1,1)") "", "the file has a header but no thread block"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 1,0,0\n",
         "k.traceg:6: thread block (1,0,0) is outside the grid (1,1,1)"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\n",
         "k.traceg:7: warp 1 is outside a CTA of 1 warps"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
         "0010 ffffffff 0 EXIT 0 0\n#END_TB\n",
         "k.traceg:10: warp 0 of thread block (0,0,0) declares 2 instructions (line 8) but has 1"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n"
         "0010 ffffffff 0 EXIT 0 0\n",
         "k.traceg:9: the file ends inside warp 0 of thread block (0,0,0) (line 7) after 1 of its 2 instructions"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n"
         "0010 ffffffff 0 EXIT 0 0\n", "k.traceg:9: the file ends inside a thread block (no #END_TB; truncated?)"},
        {MINI("(2,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n"
         "0010 ffffffff 0 EXIT 0 0\n#END_TB\n", "holds 1 of the 2 thread blocks of its grid (2,1,1) (truncated?"},
        {MINI("(2,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 1,0,0\n#END_TB\n"
         "#BEGIN_TB\nthread block = 0,0,0\n#END_TB\n#BEGIN_TB\nthread block = 1,0,0\n#END_TB\n",
         "k.traceg:12: thread block (1,0,0) appears twice (lines 6 and 12)"},
        {MINI("(1,1,1)", "(64,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\ninsts = 0\n"
         "warp = 1\n", "k.traceg:9: warp 1 appears twice in thread block (0,0,0)"},
        {MINI("(1,1,1)", "(32,1,1)") "thread block = 0,0,0\n", "k.traceg:5: expected #BEGIN_TB"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nwarp = 0\n",
         "k.traceg:6: expected 'thread block = x,y,z' after #BEGIN_TB, found 'warp = 0'"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,x\n",
         "expected 'thread block = x,y,z', found '0,0,x'"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = x\n",
         "k.traceg:8: expected an instruction count after 'insts =', found 'x'"},
        {MINI("(1,1,1)", "(32,1,1)") "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\nwarp = 0\n",
         "k.traceg:8: expected 'insts = N' after 'warp = 0', found 'warp = 0'"},
        {"-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 2\n#\n#BEGIN_TB\n"
         "thread block = 0,0,0\nwarp = 0\ninsts = 1\n0 0 0 1 0010 ffffffff 0 EXIT 0 0\n#END_TB\n",
         "k.traceg:9: line is for thread block (0,0,0) warp 1 but sits in thread block (0,0,0) warp 0"},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        check_error(files[i].body, files[i].message);

    /* A line longer than the limit, whether it arrives whole or in pieces. */
    size_t big = GCX_TRACEG_MAX_LINE + 10;
    char *huge = malloc(big + 1);
    memset(huge, 'a', big);
    huge[big] = '\0';
    check_error(huge, "k.traceg:1: line is longer than 65536 bytes");
    parsed r = parse(huge, 1000, 0);
    CHECK(strstr(r.err.msg, "k.traceg:1: line is longer than 65536 bytes") != NULL);
    free(huge);
}

/* Cutting a valid file anywhere gives a clean error or (at a thread block boundary) a clean parse;
 * corrupting any byte never crashes. ASan/UBSan run this in CI. */
static void test_truncation_and_byte_flips(void)
{
    size_t len = strlen(small_v4);
    char *text = malloc(len + 1);
    int ok = 0;
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(text, small_v4, cut);
        text[cut] = '\0';
        parsed r = parse(text, 1 + cut % 13, 0);
        ok += r.rc == GCX_OK;
        CHECK(r.rc == GCX_OK || (r.rc == GCX_ERR_TRACE && strncmp(r.err.msg, "k.traceg:", 9) == 0));
        release(&r);
    }
    CHECK(ok < 12); /* only cuts in the final "#END_TB\n" whitespace tail parse */
    static const char junk[] = {'\0', '\n', ' ', '-', '#', 'x', '9', ',', '(', '\r', '\xff'};
    for (size_t at = 0; at < len; at += 3) {
        for (size_t j = 0; j < sizeof junk; j++) {
            memcpy(text, small_v4, len + 1);
            text[at] = junk[j];
            parsed r = parse(text, 64, GCX_TRACEG_ALLOW_MISSING_CTAS);
            CHECK(r.rc == GCX_OK || r.rc == GCX_ERR_TRACE);
            release(&r);
        }
    }
    free(text);
}

static void test_feed_after_error_repeats_it(void)
{
    gcx_opcodes ops;
    gcx_traceg p;
    gcx_error err;
    gcx_opcodes_init(&ops, &err);
    gcx_traceg_init(&p, "x.traceg", &ops, 0, &err);
    CHECK_EQ(gcx_traceg_feed(&p, "junk\n", 5, &err), GCX_ERR_TRACE);
    char first[512];
    snprintf(first, sizeof first, "%s", err.msg);
    CHECK_EQ(gcx_traceg_feed(&p, "-grid dim = (1,1,1)\n", 20, &err), GCX_ERR_TRACE);
    CHECK(strcmp(first, err.msg) == 0);
    CHECK_EQ(gcx_traceg_finish(&p, &err), GCX_ERR_TRACE);
    CHECK(strcmp(first, err.msg) == 0);
    gcx_traceg_free(&p);
    gcx_opcodes_free(&ops);
}

static void test_opcode_table_grows(void)
{
    gcx_opcodes ops;
    gcx_error err;
    CHECK_EQ(gcx_opcodes_init(&ops, &err), GCX_OK);
    char name[32];
    uint16_t idx;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 3000; i++) {
            int n = snprintf(name, sizeof name, "OP%d.X", i);
            CHECK_EQ(gcx_opcodes_intern(&ops, name, (size_t)n, &idx, &err), GCX_OK);
            CHECK_EQ(idx, i);
        }
    CHECK_EQ(ops.count, 3000);
    gcx_opcodes_free(&ops);
}

/* The row check accepts what the parser produces and names the first broken rule. */
static void test_kernel_check(void)
{
    parsed r = parse(small_v4, 0, 0);
    CHECK_EQ(r.rc, GCX_OK);
    size_t n = r.cols.n_insts;
    uint8_t *zeros = calloc(n, 1);
    gcx_kernel_view v = {
        .n_insts = n, .n_addresses = r.cols.n_addresses, .cta = r.cols.cta, .warp = r.cols.warp,
        .opcode = r.cols.opcode, .op_class = zeros, .space = zeros, .mask = r.cols.mask, .width = r.cols.width,
        .addr_offset = r.cols.addr_offset, .grid_ctas = 2, .warps_per_cta = 2, .n_opcodes = r.n_opcodes,
        .n_op_classes = 12, .n_spaces = 6,
    };
    gcx_error err;
    CHECK_EQ(gcx_kernel_check(&v, &err), GCX_OK);
    v.grid_ctas = 1;
    CHECK_EQ(gcx_kernel_check(&v, &err), GCX_ERR_TRACE);
    CHECK(strcmp(err.msg, "CTA id 1 is outside the grid of 1 CTAs") == 0);
    v.grid_ctas = 2;
    r.cols.addr_offset[3] = 5;
    CHECK_EQ(gcx_kernel_check(&v, &err), GCX_ERR_TRACE);
    CHECK(strcmp(err.msg, "addr_offset of instruction 3 is 5, expected 6 (active lanes of earlier memory "
                          "instructions)") == 0);
    r.cols.addr_offset[3] = 6;
    v.n_addresses = 7;
    CHECK_EQ(gcx_kernel_check(&v, &err), GCX_ERR_TRACE);
    CHECK(strcmp(err.msg, "7 addresses for 8 active memory lanes") == 0);
    v.n_addresses = 8;
    r.cols.cta[1] = 1;
    CHECK_EQ(gcx_kernel_check(&v, &err), GCX_ERR_TRACE);
    CHECK(strcmp(err.msg, "instruction 2 breaks the (CTA, warp) order of rows") == 0);
    free(zeros);
    release(&r);
}

int main(void)
{
    RUN(test_small_v4);
    RUN(test_every_chunking_gives_the_same_columns);
    RUN(test_address_modes_edge_cases);
    RUN(test_legacy_lineinfo_and_v5);
    RUN(test_rows_sorted_by_cta_and_warp);
    RUN(test_errors_name_file_and_line);
    RUN(test_truncation_and_byte_flips);
    RUN(test_feed_after_error_repeats_it);
    RUN(test_opcode_table_grows);
    RUN(test_kernel_check);
    return CHECK_SUMMARY();
}
