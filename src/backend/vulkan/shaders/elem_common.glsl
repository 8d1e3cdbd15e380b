/* elem_common.glsl - linear thread index over a 2-D dispatch of 256-thread groups. */
layout(local_size_x = 256) in;
uint elem_index() { return (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 256 + gl_LocalInvocationID.x; }
/* (i0, i1, i2, i3) of flattened element k of a tensor of extents ne. */
uvec4 unflat(uint k, uvec4 ne) {
    uvec4 i;
    i.x = k % ne.x; k /= ne.x;
    i.y = k % ne.y; k /= ne.y;
    i.z = k % ne.z;
    i.w = k / ne.z;
    return i;
}
uint dotu(uvec4 a, uvec4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
