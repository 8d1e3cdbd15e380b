/* Placement (§3.2/§3.3), classification (§3.4) and the sim-device spec parser.
 * Expected layer maps are worked out by hand from the contract's formula. */
#include "test_util.h"
#include "backend/placement.h"
#include "loom_backend.h"

#include <stdint.h>

#define C 0 /* CPU */

/* map[i] for i in 0..blocks (last = output) */
static void check_map(const char *what, int blocks, int ngl, const float *ts, int nts,
                      const uint64_t *freem, int n_gpus, const int *expect) {
    float splits[16];
    int ns = 0;
    CHECK(loom_place_splits(ts, nts, freem, n_gpus, splits, &ns) == LOOM_OK);
    for (int i = 0; i <= blocks; i++) {
        int d = loom_place_layer(i, blocks, ngl, splits, ns, n_gpus);
        CHECK_MSG(d == expect[i], "%s: N=%d layer %d -> %d, expected %d", what, ngl, i, d, expect[i]);
    }
}

static void test_layer_map(void) {
    const float one[1] = {1};
    uint64_t fm[3] = {0, 0, 0};
    /* blocks = 4, one GPU (device 1) */
    { int e[] = {C, C, C, C, C}; check_map("1gpu", 4, 0, one, 1, fm, 1, e); }
    { int e[] = {C, C, C, C, C}; check_map("1gpu", 4, -3, one, 1, fm, 1, e); }
    { int e[] = {C, C, C, 1, C}; check_map("1gpu", 4, 1, one, 1, fm, 1, e); }
    { int e[] = {1, 1, 1, 1, C}; check_map("1gpu", 4, 4, one, 1, fm, 1, e); }
    { int e[] = {1, 1, 1, 1, 1}; check_map("1gpu", 4, 5, one, 1, fm, 1, e); }
    { int e[] = {1, 1, 1, 1, 1}; check_map("1gpu", 4, 9, one, 1, fm, 1, e); }
    { int e[] = {1, 1, 1, 1, 1}; check_map("1gpu", 4, 2147483647, one, 1, fm, 1, e); }
    /* no GPU at all: everything on the CPU */
    { int e[] = {C, C, C, C, C}; check_map("0gpu", 4, 5, NULL, 0, fm, 0, e); }

    /* two GPUs, split 1:1 -> cumulative [0.5, 1] */
    const float two[2] = {1, 1};
    { int e[] = {C, C, C, C, C}; check_map("2gpu", 4, 0, two, 2, fm, 2, e); }
    /* N=1: start 3, stop 4: f(3)=0 -> gpu0 */
    { int e[] = {C, C, C, 1, C}; check_map("2gpu", 4, 1, two, 2, fm, 2, e); }
    /* N=2: start 2, stop 4: f = 0, 0.5 -> gpu0, gpu1 */
    { int e[] = {C, C, 1, 2, C}; check_map("2gpu", 4, 2, two, 2, fm, 2, e); }
    /* N=4: f = 0, .25, .5, .75 -> 0,0,1,1 ; output CPU */
    { int e[] = {1, 1, 2, 2, C}; check_map("2gpu", 4, 4, two, 2, fm, 2, e); }
    /* N=5: f = 0, .2, .4, .6, .8 -> 0,0,0,1,1 */
    { int e[] = {1, 1, 1, 2, 2}; check_map("2gpu", 4, 5, two, 2, fm, 2, e); }
    { int e[] = {1, 1, 1, 2, 2}; check_map("2gpu", 4, 7, two, 2, fm, 2, e); }

    /* three GPUs, split 1:2:1 -> cumulative [0.25, 0.75, 1] */
    const float three[3] = {1, 2, 1};
    { int e[] = {C, C, C, C, C}; check_map("3gpu", 4, 0, three, 3, fm, 3, e); }
    { int e[] = {C, C, C, 1, C}; check_map("3gpu", 4, 1, three, 3, fm, 3, e); }
    /* N=3: start 1, stop 4: f = 0, 1/3, 2/3 -> 0, 1, 1 */
    { int e[] = {C, 1, 2, 2, C}; check_map("3gpu", 4, 3, three, 3, fm, 3, e); }
    /* N=4: f = 0, .25, .5, .75 -> 0, 1, 1, 2 */
    { int e[] = {1, 2, 2, 3, C}; check_map("3gpu", 4, 4, three, 3, fm, 3, e); }
    /* N=5: f = 0, .2, .4, .6, .8 -> 0, 0, 1, 1, 2 */
    { int e[] = {1, 1, 2, 2, 3}; check_map("3gpu", 4, 5, three, 3, fm, 3, e); }
    { int e[] = {1, 1, 2, 2, 3}; check_map("3gpu", 4, 100, three, 3, fm, 3, e); }

    /* free-memory split (all-zero tensor_split): 3:1 -> [0.75, 1]; N=5: f<.75 for i<=3 */
    const float zeros[2] = {0, 0};
    uint64_t fm2[2] = {3u << 20, 1u << 20};
    { int e[] = {1, 1, 1, 1, 2}; check_map("free", 4, 5, zeros, 2, fm2, 2, e); }
    { int e[] = {1, 1, 1, 1, 2}; check_map("free", 4, 5, NULL, 0, fm2, 2, e); }
    /* free memory 0 everywhere: nothing offloaded */
    { int e[] = {C, C, C, C, C}; check_map("free0", 4, 5, NULL, 0, fm, 2, e); }
    /* more split entries than GPUs: [1,1,2] -> [.25,.5,1]; f=.6,.8 pick entry 2 -> CPU */
    const float extra[3] = {1, 1, 2};
    { int e[] = {1, 1, 2, C, C}; check_map("extra", 4, 5, extra, 3, fm, 2, e); }
    /* negative proportion rejected */
    const float bad[2] = {1, -1};
    float sp[4];
    int ns;
    CHECK(loom_place_splits(bad, 2, fm, 2, sp, &ns) == LOOM_ERR_INVALID_ARG);
}

static void test_classify(void) {
    struct { const char *name; loom_place_rule rule; int64_t layer; } cases[] = {
        {"token_embd.weight", LOOM_RULE_INPUT, -1},
        {"position_embd.weight", LOOM_RULE_INPUT, -1},
        {"token_norm_embd.bias", LOOM_RULE_INPUT, -1},
        {"token_types.weight", LOOM_RULE_INPUT, -1},
        {"v.position_embd.weight", LOOM_RULE_INPUT, -1}, /* rule 1 before rule 3 */
        {"blk.3.token_embd.weight", LOOM_RULE_INPUT, -1},
        {"output.weight", LOOM_RULE_OUTPUT, -1},
        {"output_norm.weight", LOOM_RULE_OUTPUT, -1},
        {"cls.bias", LOOM_RULE_OUTPUT, -1},
        {"altup_proj.weight", LOOM_RULE_OUTPUT, -1},
        {"altup_unembd_proj.weight", LOOM_RULE_OUTPUT, -1},
        {"per_layer_token_embd.weight", LOOM_RULE_OUTPUT, -1},
        {"per_layer_model_proj.weight", LOOM_RULE_OUTPUT, -1},
        {"per_layer_proj_norm.weight", LOOM_RULE_OUTPUT, -1},
        {"blk.0.attn_output.weight", LOOM_RULE_LAYER, 0},     /* part is attn_output */
        {"v.blk.3.attn_q.weight", LOOM_RULE_VISION, -1},
        {"mm.0.weight", LOOM_RULE_VISION, -1},
        {"vv.0.weight", LOOM_RULE_LAYER, 0},
        {"rope_freqs.weight", LOOM_RULE_ROPE, -1},
        {"rope_factors_long.weight", LOOM_RULE_ROPE, -1},
        {"rope_factors_short.weight", LOOM_RULE_ROPE, -1},
        {"blk.12.attn_q.weight", LOOM_RULE_LAYER, 12},
        {"blk.7.ffn_down.3.weight", LOOM_RULE_LAYER, 7},   /* first digit run */
        {"layer99x", LOOM_RULE_LAYER, 99},
        {"a.99999999999999999999999.b", LOOM_RULE_LAYER, INT64_MAX},
        {"foo.weight", LOOM_RULE_NODIGIT, -1},
        {"outputs.weight", LOOM_RULE_NODIGIT, -1},          /* not exactly "output" */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t l = 123;
        loom_place_rule r = loom_place_classify(cases[i].name, &l);
        CHECK_MSG(r == cases[i].rule && l == cases[i].layer, "%s: rule %d layer %lld", cases[i].name,
                  (int)r, (long long)l);
    }
    CHECK(loom_place_has_part("a.b.c", "b"));
    CHECK(!loom_place_has_part("a.bb.c", "b"));
    CHECK(loom_place_has_part("output", "output"));
}

static void test_sim_parse(void) {
    loom_sim_device d[4];
    int n = -1;
    loom_error e = {0};
    CHECK(loom_sim_devices_parse("gpu0=512MiB,gpu1=256MiB", d, 4, &n, &e) == LOOM_OK);
    CHECK_EQ_INT(n, 2);
    CHECK(!strcmp(d[0].name, "gpu0") && d[0].memory_bytes == 512ull * 1024 * 1024);
    CHECK(!strcmp(d[1].name, "gpu1") && d[1].memory_bytes == 256ull * 1024 * 1024);
    CHECK(loom_sim_devices_parse("a=1GiB,b=3KiB,c=17,d=5B", d, 4, &n, NULL) == LOOM_OK);
    CHECK_EQ_INT(n, 4);
    CHECK(d[0].memory_bytes == 1ull << 30 && d[1].memory_bytes == 3072 && d[2].memory_bytes == 17 &&
          d[3].memory_bytes == 5);
    CHECK(loom_sim_devices_parse("", d, 4, &n, NULL) == LOOM_OK && n == 0);
    const char *bad[] = {"gpu0", "gpu0=", "=1MiB", "gpu0=1XB", "gpu0=1MiB,gpu0=2MiB", "a=1,b=1,c=1,d=1,e=1",
                         "gpu0=99999999999999999999", "gpu0=17179869184GiB", "g pu=1", "CPU=1MiB",
                         "gpu0=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_error e2 = {0};
        CHECK_MSG(loom_sim_devices_parse(bad[i], d, 4, &n, &e2) == LOOM_ERR_INVALID_ARG && e2.msg[0],
                  "spec '%s' accepted", bad[i]);
    }
}

/* One tensor-split parser and check in the library (issue #14 item 6): non-finite,
 * negative, overflowing (3e38,3e38 summed to inf and silently put every layer on the
 * CPU with LOOM_OK) and all-zero lists are refused with a message, by the parser and by
 * loom_backend_open alike. */
static void test_split_check(void) {
    float v[LOOM_TENSOR_SPLIT_MAX + 2];
    int n = -1;
    loom_error e = {0};
    CHECK(loom_tensor_split_parse("3,1", v, 8, &n, &e) == LOOM_OK && n == 2 && v[0] == 3 && v[1] == 1);
    CHECK(loom_tensor_split_parse("1/2/0.5", v, 8, &n, NULL) == LOOM_OK && n == 3 && v[2] == 0.5f);
    CHECK(loom_tensor_split_parse("0,1", v, 8, &n, NULL) == LOOM_OK && n == 2);
    struct { const char *spec, *needle; } bad[] = {
        {"3e38,3e38", "overflow"}, {"1e39,1", "infinite"}, {"nan,1", "NaN"}, {"inf", "infinite"},
        {"-1,2", "-1"},           {"0,0", "zero"},         {"1,abc", "abc"}, {"1,,2", "empty"},
        {"", "empty"},            {"1,2,", "empty"},       {"1 ,2", "not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_error e2 = {0};
        n = -1;
        CHECK_MSG(loom_tensor_split_parse(bad[i].spec, v, 8, &n, &e2) == LOOM_ERR_INVALID_ARG && n == 0,
                  "split '%s' accepted", bad[i].spec);
        CHECK_MSG(strstr(e2.msg, bad[i].needle) != NULL, "split '%s': message '%s'", bad[i].spec, e2.msg);
    }
    CHECK(loom_tensor_split_parse("1,1,1", v, 2, &n, NULL) == LOOM_ERR_INVALID_ARG);
    const float big[2] = {3e38f, 3e38f}, zero[2] = {0, 0}, nan_[2] = {NAN, 1}, neg[2] = {1, -0.5f};
    const float *lists[] = {big, zero, nan_, neg};
    for (int i = 0; i < 4; i++) {
        loom_error e3 = {0};
        CHECK(loom_tensor_split_check(lists[i], 2, &e3) == LOOM_ERR_INVALID_ARG && e3.msg[0]);
        /* loom_backend_open refuses them too, before reading anything */
        loom_backend_params p = loom_backend_default_params();
        loom_sim_device d[2];
        int nd = 0;
        CHECK(loom_sim_devices_parse("gpu0=1GiB,gpu1=1GiB", d, 2, &nd, NULL) == LOOM_OK);
        p.sim_devices = d;
        p.n_sim_devices = nd;
        p.n_gpu_layers = 99;
        p.dry_run = true;
        p.tensor_split = lists[i];
        p.n_tensor_split = 2;
        loom_backend *be = NULL;
        loom_error e4 = {0};
        CHECK_EQ_INT(loom_backend_open(test_path("models/stories260K.gguf"), &p, &be, &e4), LOOM_ERR_INVALID_ARG);
        CHECK(be == NULL && strstr(e4.msg, "tensor split") != NULL);
    }
}

int main(void) {
    test_layer_map();
    test_classify();
    test_sim_parse();
    test_split_check();
    return test_finish("test_backend_placement");
}
