#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint BKB = 32; // B rows: a type of its own
layout(constant_id = 4) const uint WG = 128;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) readonly buffer B { float16_t b[]; };
layout(binding = 2) buffer C { float c[]; };
layout(push_constant) uniform P { uint M, N, K; } p;
void main() {
  uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
  fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>(0.0);
  for (uint k = 0; k < p.K; k += BK) {
    fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK> ma;
    fcoopmatNV<16, gl_ScopeWorkgroup, BKB, BN> mb;
    coopMatLoadNV(ma, a, m0 * p.K + k, p.K, false);   // A row-major M x K
    coopMatLoadNV(mb, b, n0 * p.K + k, p.K, true);    // B stored N x K (column-major K x N)
    acc = coopMatMulAddNV(ma, mb, acc);
  }
  coopMatStoreNV(acc, c, m0 * p.N + n0, p.N, false);
}
