import sys, torch
sys.path.insert(0, "benchmarks")
import matmul as bm
from numba import cuda
from examples import gemm


def main():
    a = torch.randn(16384, 64, 64, device="cuda", dtype=torch.float16); b = torch.randn_like(a)
    c = torch.empty(16384, 64, 64, device="cuda", dtype=torch.float16)
    k = bm.register_kernel(64, "float16", "float32", 128, 32, 4, None, True, 3)
    k[16384 // 4, 128](cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(c))
    torch.cuda.synchronize()
    n = 8192
    A = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); B = torch.randn_like(A); C = torch.empty_like(A)
    g = gemm.make_pipelined_gemm((128, 128, 32), "int16", "float32", 128, "bf16")
    g[(n // 128, n // 128), 128](*(cuda.as_cuda_array(t.view(torch.int16)) for t in (A, B, C)), 1.0, 0.0)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
