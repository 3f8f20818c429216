/* The HIP backend's kernels: one translation unit, one code object per target. */
#include "dk_gemm.hip"
#include "dk_gemm_fast.hip"
#include "dk_conv_narrow.hip"
#include "dk_attention.hip"
#include "dk_attention_fast.hip"
#include "dk_attention_rows.hip"
#include "dk_elementwise.hip"
#include "dk_group_norm.hip"
