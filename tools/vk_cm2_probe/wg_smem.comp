#version 450
// Probe variant: the operands staged in shared memory by the shader (double
// buffered, 16-byte vectors), workgroup-scope matrices loaded from there.
// B stored K x N row-major (probe's last argument 1).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint BKB = 32;
layout(constant_id = 4) const uint WG = 128;
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) readonly buffer B { uvec4 b[]; };
layout(binding = 2) buffer C { float c[]; };
layout(push_constant) uniform P { uint M, N, K; } p;
const uint VA = BK / 8, LDA = VA + 1, VB = BN / 8, LDB = VB + 1;
const uint SA = BM * LDA, SB = BK * LDB;
const uint LA = BM * VA / WG, LB = BK * VB / WG;
shared uvec4 sa[2 * SA];
shared uvec4 sb[2 * SB];
void main() {
  uint t = gl_LocalInvocationID.x;
  uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
  uint kv = p.K / 8, nv = p.N / 8;
  uvec4 ra[8], rb[8];
  fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>(0.0);
  [[unroll]] for (uint i = 0; i < 8; i++) if (i < LA) { uint e = t + i * WG; ra[i] = a[(m0 + e / VA) * kv + e % VA]; }
  [[unroll]] for (uint i = 0; i < 8; i++) if (i < LB) { uint e = t + i * WG; rb[i] = b[(e / VB) * nv + n0 / 8 + e % VB]; }
  [[unroll]] for (uint i = 0; i < 8; i++) if (i < LA) { uint e = t + i * WG; sa[(e / VA) * LDA + e % VA] = ra[i]; }
  [[unroll]] for (uint i = 0; i < 8; i++) if (i < LB) { uint e = t + i * WG; sb[(e / VB) * LDB + e % VB] = rb[i]; }
  barrier();
  uint ns = p.K / BK;
  for (uint s = 0; s < ns; s++) {
    uint buf = s & 1u;
    if (s + 1 < ns) {
      uint k1 = (s + 1) * BK;
      [[unroll]] for (uint i = 0; i < 8; i++) if (i < LA) { uint e = t + i * WG; ra[i] = a[(m0 + e / VA) * kv + k1 / 8 + e % VA]; }
      [[unroll]] for (uint i = 0; i < 8; i++) if (i < LB) { uint e = t + i * WG; rb[i] = b[(k1 + e / VB) * nv + n0 / 8 + e % VB]; }
    }
    fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK> ma;
    fcoopmatNV<16, gl_ScopeWorkgroup, BKB, BN> mb;
    coopMatLoadNV(ma, sa, buf * SA, LDA, false);
    coopMatLoadNV(mb, sb, buf * SB, LDB, false);
    acc = coopMatMulAddNV(ma, mb, acc);
    if (s + 1 < ns) {
      uint o = buf ^ 1u;
      [[unroll]] for (uint i = 0; i < 8; i++) if (i < LA) { uint e = t + i * WG; sa[o * SA + (e / VA) * LDA + e % VA] = ra[i]; }
      [[unroll]] for (uint i = 0; i < 8; i++) if (i < LB) { uint e = t + i * WG; sb[o * SB + (e / VB) * LDB + e % VB] = rb[i]; }
    }
    barrier();
  }
  coopMatStoreNV(acc, c, m0 * p.N + n0, p.N, false);
}
