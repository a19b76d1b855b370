# Three GPU jobs that "GPU utilisation" cannot tell apart and GPM can
# (scripts/gpu-check, issue 36). Runs on the GPU machine, whose python3
# has PyTorch:  python3 gpuwork.py MODE SECONDS
#   matmul  large bf16 matrix products: SMs and tensor cores busy
#   tiny    one tiny kernel after another, replayed from a CUDA graph (no
#           launch gaps): utilisation ~100 %, the SMs nearly all idle
#   launch  the same tiny kernels launched one by one from Python: the GPU
#           waits on the host's launches (utilisation ~30 % on an H200)
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
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1.0)  # warm-up before capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(1000):
            x.add_(1.0)
    while time.time() < end:
        for _ in range(10):
            graph.replay()
        torch.cuda.synchronize(); n += 10000
elif mode == "launch":
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
