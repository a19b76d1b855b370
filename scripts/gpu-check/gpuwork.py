# Three GPU jobs that "GPU utilisation" cannot tell apart and GPM can
# (scripts/gpu-check, issue 36). Runs on the GPU machine, whose python3
# has PyTorch:  python3 gpuwork.py MODE SECONDS
#   matmul  large bf16 matrix products: SMs and tensor cores busy
#   tiny    one tiny kernel after another: utilisation ~100 %, SMs idle
#   copy    pageable host-to-device copies, the GPU mostly waiting on PCIe
import sys, time, torch

mode, secs = sys.argv[1], float(sys.argv[2])
d = torch.device("cuda")
end = time.time() + secs
n = 0
if mode == "matmul":
    a = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize(); n += 20
elif mode == "tiny":
    x = torch.zeros(256, device=d)
    while time.time() < end:
        for _ in range(1000):
            x.add_(1.0)
        torch.cuda.synchronize(); n += 1000
elif mode == "copy":
    host = torch.empty(int(1 << 30), dtype=torch.uint8)  # 1 GiB, pageable
    host.fill_(1)
    while time.time() < end:
        g = host.to(d, non_blocking=False)
        g.add_(1)  # a token of work on what arrived
        torch.cuda.synchronize(); n += 1
else:
    sys.exit("mode: matmul, tiny or copy")
print(f"gpuwork {mode}: {n} iterations in {secs:.0f}s", flush=True)
