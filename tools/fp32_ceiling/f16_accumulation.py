# Whether packed f16 arithmetic (HFMA2: f16 products summed in f16) could serve the portable
# conv within the test tolerance: a GEMM of f16 operands whose K is summed in f16 over slices of
# S products (each step one fused multiply-add rounded to f16), the slices added in fp32, the
# result rounded to f16; compared with the fp64 sum as tests/harness/harness_check.c does
# (relative L2, and per element |y - ref| / (|ref| + rms(ref)), both against
# 1e-3 + 1e-5 * max(1, sqrt(K) / 8)).  Runs on the CPU (numpy), about a minute.
import numpy as np

rng = np.random.default_rng(0)
for K in (1152, 4608):  # 3x3 convs over 128 and 512 input channels
    M, N = 2048, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    rms = np.sqrt((ref ** 2).mean())
    tol = 1e-3 + 1e-5 * max(1.0, np.sqrt(K) / 8)

    def report(what, y):
        y = y.astype(np.float16).astype(np.float64)
        rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
        worst = (np.abs(y - ref) / (np.abs(ref) + rms)).max()
        verdict = "passes" if rel <= tol and worst <= tol else "FAILS"
        print(f"K {K:5d} {what:26s} rel_l2 {rel:.2e}  worst element {worst:.2e}  tol {tol:.2e}: {verdict}")

    for S in (2, 8, 16, 32):
        acc = np.zeros((M, N), np.float32)
        for k0 in range(0, K, S):
            part = np.zeros((M, N), np.float16)
            for k in range(k0, k0 + S):
                part = (part.astype(np.float64) + a64[:, k:k + 1] * b64[k:k + 1, :]).astype(np.float16)
            acc += part.astype(np.float32)
        report(f"f16 sums of {S} products", acc)
    report("fp32 accumulation", a.astype(np.float32) @ b.astype(np.float32))
