/* Parameter slots shared by the Vulkan host code (backends/vulkan) and the GLSL
 * shaders (shaders/): each dispatch writes an int32 array into its parameter
 * ring slot; these name the indices.  Element offsets/strides are in elements of
 * the tensor's dtype, relative to the tensor's binding. */
#ifndef DK_VK_PARAMS_H
#define DK_VK_PARAMS_H

#define DK_VKP_SLOT_INTS 64 /* ints per dispatch (256 bytes) */

/* Specialization constant ids: only what changes the inner loops, so that few
 * pipelines get built (lavapipe takes seconds per GEMM pipeline). */
#define DK_VKS_DT 0     /* 1 f32, 2 f16, 3 bf16 */
#define DK_VKS_DT2 1    /* second dtype (dk_convert output) */
#define DK_VKS_MODE 2   /* eltwise: 0 unary, 1 add, 2 nearest resize; group_norm: see DK_VKP_GN_COEF */
#define DK_VKS_ACT 3    /* activation (dk_activation) of the shaders that apply one */
#define DK_VKS_CM_KB 4  /* cooperative-matrix B row count: never set (16); see dk_coopmat.glsl */

/* Slots every op may use: the epilogue activation and flags (bit 0 bias/gamma,
 * bit 1 residual/beta, bit 2 K-fast A loads for channels-last conv input, bit 3
 * conv weights pre-packed dense [K][Cout]; portable GEMM core, see
 * shaders/dk_gemm_tile.glsl: bit 5 K-fast B loads, bit 6 epilogue rows fastest). */
#define DK_VKP_ACT 62
#define DK_VKP_FLAGS 63

/* conv (conv2d and each stride phase of conv_transpose2d) as implicit GEMM */
#define DK_VKP_CV_M 0
#define DK_VKP_CV_NC 1
#define DK_VKP_CV_K 2
#define DK_VKP_CV_CING 3
#define DK_VKP_CV_H 4
#define DK_VKP_CV_W 5
#define DK_VKP_CV_OHS 6
#define DK_VKP_CV_OWS 7
#define DK_VKP_CV_TH 8
#define DK_VKP_CV_TW 9
#define DK_VKP_CV_STRH 10
#define DK_VKP_CV_STRW 11
#define DK_VKP_CV_OFFH 12
#define DK_VKP_CV_OFFW 13
#define DK_VKP_CV_DILH 14
#define DK_VKP_CV_DILW 15
#define DK_VKP_CV_UPS 16
#define DK_VKP_CV_KH0 17
#define DK_VKP_CV_KW0 18
#define DK_VKP_CV_KSTH 19
#define DK_VKP_CV_KSTW 20
#define DK_VKP_CV_OH0 21
#define DK_VKP_CV_OW0 22
#define DK_VKP_CV_OSTH 23
#define DK_VKP_CV_OSTW 24
#define DK_VKP_CV_XS 25   /* 4 strides n c h w, then offset at +4 */
#define DK_VKP_CV_WGS 30  /* weight: group stride, co stride, ci stride, kh, kw, offset */
#define DK_VKP_CV_BS 36   /* bias stride, offset */
#define DK_VKP_CV_RS 38   /* residual 4 strides + offset */
#define DK_VKP_CV_YS 43   /* output 4 strides + offset */
#define DK_VKP_CV_OSCALE 48
#define DK_VKP_CV_RSCALE 49

/* matmul */
#define DK_VKP_MM_M 0
#define DK_VKP_MM_N 1
#define DK_VKP_MM_K 2
#define DK_VKP_MM_AS 3    /* a: batch, m, k strides, offset */
#define DK_VKP_MM_BS 7    /* b: batch, k, n strides, offset */
#define DK_VKP_MM_BIAS 11 /* stride, offset */
#define DK_VKP_MM_RS 13   /* residual batch, m, n strides, offset */
#define DK_VKP_MM_YS 17   /* y batch, m, n strides, offset */
#define DK_VKP_MM_OSCALE 21
#define DK_VKP_MM_RSCALE 22

/* elementwise: activation, add, convert, upsample_nearest */
#define DK_VKP_EW_SHAPE 0 /* y shape[4] */
#define DK_VKP_EW_AS 4    /* a strides[4], offset */
#define DK_VKP_EW_BS 9    /* b strides[4], offset */
#define DK_VKP_EW_YS 14   /* y strides[4], offset */
#define DK_VKP_EW_ALPHA 19
#define DK_VKP_EW_BETA 20
#define DK_VKP_EW_SRCH 21 /* upsample: source H, W */
#define DK_VKP_EW_SRCW 22
#define DK_VKP_EW_TOTAL 23
#define DK_VKP_EW_FLAT 24  /* every operand dense in the walk order (dk__elt_order), 16-byte aligned starts; upsample: the vector path */
#define DK_VKP_EW_OSCALE 25 /* activation, add: y = oscale * act(...) */

/* group_norm: statistics, finalize, normalize */
#define DK_VKP_GN_N 0
#define DK_VKP_GN_C 1
#define DK_VKP_GN_H 2
#define DK_VKP_GN_W 3
#define DK_VKP_GN_G 4
#define DK_VKP_GN_CHUNKS 5
#define DK_VKP_GN_CHUNK 6   /* chunk size: elements (MODE 0), vectors (1) or pixels (2) */
#define DK_VKP_GN_XS 7      /* x strides[4], offset */
#define DK_VKP_GN_YS 12     /* y strides[4], offset */
#define DK_VKP_GN_GAMMA 17  /* stride, offset */
#define DK_VKP_GN_BETA 19   /* stride, offset */
#define DK_VKP_GN_EPS 21
#define DK_VKP_GN_CFAST 22  /* 1: channel is the fastest stride (NHWC) */
#define DK_VKP_GN_SCR 23    /* element offset of the partials in the scratch binding */
#define DK_VKP_GN_COEF 24   /* element offset of the per-(n, c) vec4 (mean, rstd*gamma, beta, 0) */
#define DK_VKP_GN_TOTAL 25  /* elements (MODE 0) or 16-byte vectors (MODE 1, 2) to normalize */
#define DK_VKP_GN_STATS 26  /* split GroupNorm: element offset of (mean, variance) pairs in binding 3;
                             * FLAGS 4: the finalize pass writes them (no coefficients), 8: reads them */
/* GroupNorm MODE (specialization constant): 0 any strides; 1 dense NCHW with H*W
 * a multiple of the vector width; 2 dense NHWC with C a multiple of it.  Modes 1
 * and 2 move 16-byte vectors (8 f16/bf16 or 4 f32 elements) of one image. */

/* layer_norm */
#define DK_VKP_LN_ROWS 0
#define DK_VKP_LN_R1 1      /* sizes of leading dims 1 and 2 (dim 0 implied) */
#define DK_VKP_LN_R2 2
#define DK_VKP_LN_D 3
#define DK_VKP_LN_XS 4      /* x strides of the 3 leading dims, then the last dim, offset */
#define DK_VKP_LN_YS 9
#define DK_VKP_LN_GAMMA 14
#define DK_VKP_LN_BETA 16
#define DK_VKP_LN_EPS 18

/* attention */
#define DK_VKP_AT_H 0
#define DK_VKP_AT_NQ 1
#define DK_VKP_AT_NKV 2
#define DK_VKP_AT_D 3
#define DK_VKP_AT_DV 4
#define DK_VKP_AT_SCALE 5
#define DK_VKP_AT_QS 6      /* 4 strides + offset */
#define DK_VKP_AT_KS 11
#define DK_VKP_AT_VS 16
#define DK_VKP_AT_OS 21

#endif /* DK_VK_PARAMS_H */
