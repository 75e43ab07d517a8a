"""comm_torch.py: the peer of bench/comm_bench.c: all_reduce (f32, sum, in place) bandwidth of
torch.distributed over NCCL on two GPUs, 1 MiB to 1 GiB, one process per GPU
(torch.multiprocessing). Each iteration is timed on the host from a barrier-free start until
torch.cuda.synchronize() on rank 0, after a few warm iterations (min_us, mean_us); b2b_us is the
mean of the same number of calls back to back with one synchronize, as nccl-tests measures, and
algbw/busbw come from it; busbw = algbw * 2 (n - 1) / n
as nccl-tests defines it. Prints the same table and RESULT lines as wick_comm_bench; --min-bytes
B starts the sizes at B (as wick_comm_bench's, 200 iterations below 1 MiB).
    python3 bench/comm_torch.py [--ranks N] [--min-bytes B] [--max-mib M]
"""
import argparse
import os
import time


def worker(rank, n, max_mib, port, min_bytes=1 << 20):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=n,
                            rank=rank, device_id=torch.device("cuda", rank))
    x = torch.zeros((max_mib << 18,), dtype=torch.float32, device=f"cuda:{rank}")
    if rank == 0:
        print(f"torch {torch.__version__} all_reduce f32 sum, {n} x {torch.cuda.get_device_name(0)}, "
              f"nccl {'.'.join(map(str, torch.cuda.nccl.version()))}")
        print(f"{'bytes':>12} {'min_us':>10} {'mean_us':>10} {'b2b_us':>10} {'algbw_GB/s':>12} {'busbw_GB/s':>12}")
    nbytes = max(min_bytes, 4)
    while nbytes <= max_mib << 20:
        view = x[: nbytes // 4]
        warm, iters = 3, (10 if nbytes >= 256 << 20 else 200 if nbytes < 1 << 20 else 30)
        times = []
        for it in range(warm + iters):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dist.all_reduce(view)
            torch.cuda.synchronize()
            t = (time.perf_counter() - t0) * 1e6
            if it >= warm:
                times.append(t)
        # as nccl-tests measures: iters calls back to back, one synchronize, the mean time
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for it in range(iters):
            dist.all_reduce(view)
        torch.cuda.synchronize()
        b2b = (time.perf_counter() - t0) * 1e6 / iters
        if rank == 0:
            best, mean = min(times), sum(times) / len(times)
            algbw = nbytes / b2b / 1e3
            busbw = algbw * 2 * (n - 1) / n
            print(f"{nbytes:>12} {best:>10.1f} {mean:>10.1f} {b2b:>10.1f} {algbw:>12.2f} {busbw:>12.2f}")
            print(f"RESULT torch {nbytes} {best:.1f} {b2b:.1f} {busbw:.2f}", flush=True)
        nbytes *= 2
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--max-mib", type=int, default=1024)
    ap.add_argument("--min-bytes", type=int, default=1 << 20)
    a = ap.parse_args()
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < a.ranks:
        print(f"skip: {a.ranks} GPUs needed, {torch.cuda.device_count()} found")
        return
    port = 29500 + os.getpid() % 1000
    mp.spawn(worker, args=(a.ranks, a.max_mib, port, a.min_bytes), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
