# The fp32 GEMM and conv NVIDIA's libraries reach with TF32 off (cuBLAS, cuDNN), at the SDXL VAE's GEMM shapes.
import torch
torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
def t(f, it=10):
    f(); torch.cuda.synchronize()
    e0 = torch.cuda.Event(True); e1 = torch.cuda.Event(True); best = 1e9
    for _ in range(3):
        e0.record()
        for _ in range(it): f()
        e1.record(); torch.cuda.synchronize(); best = min(best, e0.elapsed_time(e1) / it)
    return best
for M, K, N in ((262144, 2304, 256), (65536, 4608, 512), (1048576, 1152, 128)):
    a = torch.randn(M, K, device='cuda'); b = torch.randn(K, N, device='cuda')
    ms = t(lambda: a @ b); print(f"cuBLAS fp32 matmul {M}x{K}x{N}: {ms:.3f} ms, {2*M*K*N/ms/1e9:.1f} TFLOP/s")
for C, H in ((256, 512), (512, 256), (128, 1024)):
    x = torch.randn(1, C, H, H, device='cuda').to(memory_format=torch.channels_last)
    w = torch.randn(C, C, 3, 3, device='cuda').to(memory_format=torch.channels_last)
    ms = t(lambda: torch.nn.functional.conv2d(x, w, padding=1)); print(f"cuDNN fp32 conv3x3 {C}->{C} @{H}: {ms:.3f} ms, {2*H*H*C*C*9/ms/1e9:.1f} TFLOP/s")
