/* mm_common.glsl - push constants of MUL_MAT / MUL_MAT_ID kernels.
 * dst F32 [M, N, B2, B3] = a[K, M, A2, A3]^T x b[K, N, B2, B3]; slice (i2, i3) of b
 * uses slice (i2 / r2, i3 / r3) of a. MUL_MAT_ID: ids at binding 2, expert = ids[s,t]
 * (see mul_mat_id.comp). Offsets/strides in bytes (see common.glsl). */
layout(push_constant) uniform PC {
    uint K, M, N, B2;
    uint r2, r3, nb01, nb02;
    uint nb03, nb11, nb12, nb13;
    uint nbd1, nbd2, nbd3, off_a;
    uint off_b, off_d, row0, rows; /* rows [row0, row0 + rows) of a in this dispatch */
    uint off_ids, nb_ids0, nb_ids1, n_exp; /* MUL_MAT_ID: ids strides, experts */
    uint B1, S, q8_row, pad0; /* MUL_MAT_ID: b.ne1, ids.ne0; int8 path: bytes per q8 row */
} p;

/* Linear workgroup id over a 2-D dispatch (x is limited to 65535 groups). */
uint wg_linear() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }
