#!/usr/bin/env python3
"""bench/cuda/peer_gpt2_torch.py: the peer of bench_relm_gpt2_gpu, batch-1 GPT-2 124M decode in PyTorch.

What a user would otherwise run: Hugging Face transformers' GPT2LMHeadModel (random initialisation from
GPT2Config(), the same shape as bench_relm_gpt2_gpu's model: L 12, NH 12, C 768, V 50257, 1024 positions), fp32,
eager mode, one token per step against its KV cache (past_key_values), with the log-softmax of the logits computed
each step as ReLM does, and the same windows of positions as our benchmark. Run by build/gpu/run.sh when python3 has
torch and transformers (the GPU machines' CUDA image has both); prints "skipped: ..." and exits 0 otherwise.
"""
import sys
import time


def main():
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except Exception as e:  # noqa: BLE001 - any import failure means the peer is not available here
        print(f"skipped: torch/transformers not importable ({e.__class__.__name__}: {e})")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 0
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    torch.manual_seed(0)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32, as our kernels
    torch.backends.cudnn.allow_tf32 = False
    model = GPT2LMHeadModel(GPT2Config()).to(dev).eval()
    toks = torch.randint(0, 50257, (steps,), device=dev)
    print(f"peer: PyTorch {torch.__version__}, transformers GPT2LMHeadModel (random init), "
          f"{torch.cuda.get_device_name(0)}, fp32 (tf32 off), batch 1, eager")
    marks = [1, 64, 128, 256, 512, 1023]
    with torch.no_grad():
        for rep in range(2):  # rep 0 warms up (kernels, allocator)
            past = None
            prev, t_prev = 0, time.perf_counter()
            t0 = t_prev
            for t in range(min(steps, 1024)):
                out = model(input_ids=toks[t:t + 1].view(1, 1), past_key_values=past, use_cache=True)
                past = out.past_key_values
                torch.log_softmax(out.logits[0, -1], dim=-1)
                torch.cuda.synchronize()  # one token at a time, as the search needs its result
                if rep == 1 and t + 1 in marks:
                    now = time.perf_counter()
                    per = (now - t_prev) / (t + 1 - prev)
                    print(f"  positions {prev}..{t}, per token {per * 1e6:10.1f} us ({1.0 / per:.0f} tok/s)")
                    prev, t_prev = t + 1, now
            if rep == 1:
                print(f"  mean over {prev} positions: {prev / (t_prev - t0):.0f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
