// Cooperative-matrix spelling shared by the tensor-core shaders: 16x16 f16 A
// and B fragments, fp32 accumulators, loads/stores/multiply-add, and the
// packing of two floats into the storage dtype's 16-bit pair.
//
// Written once for both spellings of the extension: GL_NV_cooperative_matrix
// (the default: Debian's glslang 12 compiles only this one) and, with
// DK_COOPMAT_KHR defined, GL_KHR_cooperative_matrix.  The build also turns
// the NV modules into KHR ones (shaders/coopmat_khr.py), with bf16 A and B
// where asked; for that, B fragments have a type of their own in the NV
// spelling too: their row count is a specialization constant (never set, so
// 16), which gives them a distinct SPIR-V type.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#ifdef DK_COOPMAT_KHR
#extension GL_KHR_cooperative_matrix : require
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define CM_LOAD(m, buf, off, ld) coopMatLoad(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_LOADT(m, buf, off, ld) coopMatLoad(m, buf, off, ld, gl_CooperativeMatrixLayoutColumnMajor)
#define CM_STORE(m, buf, off, ld) coopMatStore(m, buf, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define CM_MAD(a, b, c) coopMatMulAdd(a, b, c)
#else
#extension GL_NV_cooperative_matrix : require
layout(constant_id = DK_VKS_CM_KB) const int CM_KB = 16;
#define CM_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_B fcoopmatNV<16, gl_ScopeSubgroup, CM_KB, 16>
#define CM_C fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_LOAD(m, buf, off, ld) coopMatLoadNV(m, buf, off, ld, false)
#define CM_LOADT(m, buf, off, ld) coopMatLoadNV(m, buf, off, ld, true)
#define CM_STORE(m, buf, off, ld) coopMatStoreNV(m, buf, off, ld, false)
#define CM_MAD(a, b, c) coopMatMulAddNV(a, b, c)
#endif

// Two floats -> the storage dtype's pair of 16-bit values in one word (DT 2
// f16 by the hardware conversion, DT 3 bf16 rounded to nearest even), and back.
uint cm_pack2(float a, float b) {
    if (DT == 3) {   // dk_f2h's rounding, both halves at once (no masks, one merge)
        uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
        ua = (ua & 0x7fffffffu) > 0x7f800000u ? ua | 0x400000u : ua + 0x7fffu + ((ua >> 16) & 1u);
        ub = (ub & 0x7fffffffu) > 0x7f800000u ? ub | 0x400000u : ub + 0x7fffu + ((ub >> 16) & 1u);
        return (ua >> 16) | (ub & 0xffff0000u);
    }
    return packFloat2x16(f16vec2(a, b));
}
vec2 cm_unpack2(uint w) {
    if (DT == 3) return vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xffff0000u));
    return vec2(unpackFloat2x16(w));
}
