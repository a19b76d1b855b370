# Load for the GPU check (scripts/gpu-check): bf16 matrix products for
# busy1 s, idle for idle s holding 8 GiB, busy again for busy2 s. Runs on
# the GPU machine, whose python3 has PyTorch.

import sys, time, torch
busy1, idle, busy2 = (float(a) for a in sys.argv[1:4])
d = torch.device("cuda")
hold = torch.empty(int(8 * 2**30), dtype=torch.uint8, device=d)  # 8 GiB held throughout
a = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
def spin(sec):
    end = time.time() + sec
    n = 0
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize(); n += 20
    return n
t0 = time.time(); n1 = spin(busy1); time.sleep(idle); n2 = spin(busy2)
print(f"gpuload: {n1+n2} matmuls, {time.time()-t0:.1f}s, peak alloc {torch.cuda.max_memory_allocated()/2**30:.2f} GiB", flush=True)
