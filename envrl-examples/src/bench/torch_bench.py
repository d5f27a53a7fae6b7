#!/usr/bin/env python3
"""PyTorch side of `envrl bench generate` and `envrl bench train`.

Runs the same model, shapes, threads and steps as the Rust side, in PyTorch eager mode through
Hugging Face transformers (the stack the paper's reference code trains with), and prints one JSON
object. `envrl bench … --python PYTHON` calls it and prints both columns side by side.

    generate --gguf FILE --prompt-len P --new-tokens N --batches 1,16 --prefill-len L --threads T
    train    --config config.json --batch B --seq S --steps K --threads T

Needs: torch, transformers, gguf, numpy (`pip install torch transformers gguf numpy`).
"""

import argparse
import json
import time

import numpy as np
import torch


def cpu_time():
    return time.process_time()


def gguf_to_hf(path):
    """Dequantizes a llama/qwen2 GGUF into a transformers model (f32), undoing llama.cpp's q/k
    permutation for the llama architecture."""
    import gguf
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    reader = gguf.GGUFReader(path)
    fields = reader.fields

    def value(key):
        f = fields[key]
        return f.parts[f.data[0]].tolist()[0] if f.types[0] != gguf.GGUFValueType.STRING \
            else bytes(f.parts[f.data[0]]).decode()

    arch = value("general.architecture")
    tensors = {t.name: t for t in reader.tensors}
    vocab = int(tensors["token_embd.weight"].shape[-1])
    heads = int(value(f"{arch}.attention.head_count"))
    kv_heads = int(value(f"{arch}.attention.head_count_kv"))
    kwargs = dict(
        vocab_size=vocab,
        hidden_size=int(value(f"{arch}.embedding_length")),
        intermediate_size=int(value(f"{arch}.feed_forward_length")),
        num_hidden_layers=int(value(f"{arch}.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        rms_norm_eps=float(value(f"{arch}.attention.layer_norm_rms_epsilon")),
        rope_theta=float(value(f"{arch}.rope.freq_base")),
        tie_word_embeddings="output.weight" not in tensors,
        max_position_embeddings=8192,
    )
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**kwargs))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**kwargs))

    def weight(name):
        t = tensors[name]
        data = gguf.quants.dequantize(t.data, t.tensor_type)
        return np.asarray(data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])

    def unpermute(w, n_head):
        if arch != "llama":
            return w
        return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2) \
            .reshape(w.shape)

    names = {
        "token_embd.weight": "model.embed_tokens.weight",
        "output_norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight",
    }
    parts = {
        "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm",
        "ffn_norm": "post_attention_layernorm",
    }
    state = {}
    for name in tensors:
        w = weight(name)
        if name.startswith("blk."):
            _, layer, part, kind = name.split(".")
            if part == "attn_q":
                w = unpermute(w, heads)
            elif part == "attn_k":
                w = unpermute(w, kv_heads)
            state[f"model.layers.{layer}.{parts[part]}.{kind}"] = torch.from_numpy(w.copy())
        else:
            state[names[name]] = torch.from_numpy(w.copy())
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    assert all(m == "lm_head.weight" for m in missing), missing
    model.tie_weights()
    return model.eval()


def bench_generate(args):
    model = gguf_to_hf(args.gguf)
    vocab = model.config.vocab_size
    rng = np.random.default_rng(0)
    out = {"threads": torch.get_num_threads()}
    with torch.inference_mode():
        ids = torch.from_numpy(rng.integers(3, vocab, size=(1, args.prefill_len)))
        model(ids)  # warm-up
        start, cpu = time.perf_counter(), cpu_time()
        model(ids)
        wall = time.perf_counter() - start
        out["prefill"] = {"tokens": args.prefill_len, "seconds": wall, "cpu_seconds": cpu_time() - cpu}
        for batch in args.batches:
            ids = torch.from_numpy(rng.integers(3, vocab, size=(batch, args.prompt_len)))
            mask = torch.ones_like(ids)
            kwargs = dict(attention_mask=mask, max_new_tokens=args.new_tokens,
                          min_new_tokens=args.new_tokens, do_sample=False, use_cache=True,
                          pad_token_id=0)
            model.generate(ids, **{**kwargs, "max_new_tokens": 2, "min_new_tokens": 2})
            start, cpu = time.perf_counter(), cpu_time()
            generated = model.generate(ids, **kwargs)
            wall = time.perf_counter() - start
            new = (generated.shape[1] - args.prompt_len) * batch
            out[f"generate_b{batch}"] = {"tokens": new, "seconds": wall,
                                         "cpu_seconds": cpu_time() - cpu}
            # One new token: the prefill and the first step, subtracted to time decoding alone.
            start, cpu = time.perf_counter(), cpu_time()
            model.generate(ids, **{**kwargs, "max_new_tokens": 1, "min_new_tokens": 1})
            out[f"first_b{batch}"] = {"tokens": batch, "seconds": time.perf_counter() - start,
                                      "cpu_seconds": cpu_time() - cpu}
    print(json.dumps(out))


def bench_train(args):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    with open(args.config) as f:
        cfg = json.load(f)
    qwen2 = cfg.pop("model_type") == "qwen2"
    config = (Qwen2Config if qwen2 else LlamaConfig)(**cfg)
    torch.manual_seed(0)
    model = (Qwen2ForCausalLM if qwen2 else LlamaForCausalLM)(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0)
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(rng.integers(3, config.vocab_size, size=(args.batch, args.seq)))

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids).logits[:, :-1].float()
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    step()  # warm-up
    start, cpu = time.perf_counter(), cpu_time()
    for _ in range(args.steps):
        step()
    wall = time.perf_counter() - start
    tokens = args.batch * args.seq * args.steps
    print(json.dumps({"threads": torch.get_num_threads(), "train": {
        "tokens": tokens, "seconds": wall, "cpu_seconds": cpu_time() - cpu}}))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="what", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--gguf", required=True)
    g.add_argument("--prompt-len", type=int, default=128)
    g.add_argument("--new-tokens", type=int, default=64)
    g.add_argument("--prefill-len", type=int, default=512)
    g.add_argument("--batches", default="1,16")
    g.add_argument("--threads", type=int, default=2)
    t = sub.add_parser("train")
    t.add_argument("--config", required=True)
    t.add_argument("--batch", type=int, default=8)
    t.add_argument("--seq", type=int, default=256)
    t.add_argument("--steps", type=int, default=5)
    t.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.what == "generate":
        args.batches = [int(b) for b in args.batches.split(",")]
        bench_generate(args)
    else:
        bench_train(args)


if __name__ == "__main__":
    main()
