// FP32 FFMA and packed FP16 HFMA2 issue-rate peaks of this GPU (independent chains, no memory).
#include <cstdio>
#include <cuda_fp16.h>
#define CH 8
#define IT 4096
__global__ void ffma(float *out, float a, float b) {
    float x[CH];
    for (int c = 0; c < CH; c++) x[c] = threadIdx.x + c;
    for (int i = 0; i < IT; i++)
#pragma unroll
        for (int c = 0; c < CH; c++) x[c] = fmaf(x[c], a, b);
    float s = 0; for (int c = 0; c < CH; c++) s += x[c];
    if (s == 1234.5f) out[0] = s;
}
__global__ void hfma2(float *out, __half2 a, __half2 b) {
    __half2 x[CH];
    for (int c = 0; c < CH; c++) x[c] = __float2half2_rn(threadIdx.x * 1e-3f + c);
    for (int i = 0; i < IT; i++)
#pragma unroll
        for (int c = 0; c < CH; c++) x[c] = __hfma2(x[c], a, b);
    float s = 0; for (int c = 0; c < CH; c++) s += __low2float(x[c]) + __high2float(x[c]);
    if (s == 1234.5f) out[0] = s;
}
int main() {
    float *o; cudaMalloc(&o, 4);
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    int blocks = p.multiProcessorCount * 8, threads = 256;
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int k = 0; k < 2; k++) {
        for (int rep = 0; rep < 3; rep++) {
            cudaEventRecord(e0);
            for (int r = 0; r < 20; r++) {
                if (k == 0) ffma<<<blocks, threads>>>(o, 0.999f, 1e-3f);
                else hfma2<<<blocks, threads>>>(o, __float2half2_rn(0.999f), __float2half2_rn(1e-3f));
            }
            cudaEventRecord(e1); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1);
            double flop = 20.0 * blocks * threads * (double)IT * CH * 2 * (k ? 2 : 1);
            printf("%s peak: %.1f TFLOP/s (%d SMs)\n", k ? "HFMA2 (f16x2)" : "FFMA (f32)", flop / ms / 1e9, p.multiProcessorCount);
        }
    }
    return 0;
}
