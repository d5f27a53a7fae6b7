"""envrl's exports read by the real readers (issue 26): transformers loads the `hf` export and
gives envrl's logits and greedy tokens, PEFT loads the `peft` adapter on its base model and gives
the merged model's logits, and the `gguf` package (llama.cpp's Python reader) reads every tensor
and metadata key of the `gguf` export as the Hugging Face weights and config say.

Run by scripts/export-check.sh, which trains the runs and exports them; this file only checks.
Usage: export_check.py ENVRL_BINARY CASES.json
CASES.json: [{"kind": "hf"|"peft"|"gguf", ...paths}] (see export-check.sh).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

TEXTS = [
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a "
    "drawer 2, and a countertop 1.\nYour task is to: put a clean mug in coffeemachine.",
    "<think>The key may be north.</think><action>go north</action>",
    "Nothing happens.",
]

LOGIT_TOLERANCE = 1e-4


def run(*args):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed:\n{out.stderr}")
    return out.stdout


def envrl_logits(envrl, model, rows):
    with tempfile.TemporaryDirectory() as tmp:
        inp, outp = Path(tmp, "ids.json"), Path(tmp, "logits.json")
        inp.write_text(json.dumps(rows))
        run(envrl, "lm", "logits", "--model", model, "--input", inp, "--output", outp)
        return np.array(json.loads(outp.read_text())["logits"], dtype=np.float32)


def envrl_generate(envrl, model, ids, n):
    out = run(envrl, "lm", "generate", "--model", model, "--ids", ",".join(map(str, ids)),
              "--max-new-tokens", n)
    line = next(l for l in out.splitlines() if l.startswith("ids: "))
    return [int(t) for t in line[5:].split(",") if t]


def envrl_prompt_ids(envrl, model, text):
    out = run(envrl, "lm", "generate", "--model", model, "--prompt", text, "--max-new-tokens", 1)
    line = next(l for l in out.splitlines() if l.startswith("prompt ids: "))
    return [int(t) for t in line[12:].split(",") if t]


def torch_logits(model, rows):
    with torch.no_grad():
        return model(torch.tensor(rows)).logits.float().numpy()


def rows_for(vocab, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, size=(2, 12)).tolist()


def compare(what, ours, theirs, tolerance):
    """Per row, ‖ours − theirs‖ / ‖theirs‖ ≤ tolerance (the criterion of ../shared/models)."""
    rows = ours.reshape(ours.shape[0], -1), theirs.reshape(theirs.shape[0], -1)
    relative = float(max(np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(*rows)))
    diff = float(np.max(np.abs(ours - theirs)))
    status = "ok" if relative <= tolerance else "FAIL"
    print(f"  {what}: relative error {relative:.1e} per row (≤ {tolerance:.0e}), "
          f"max |Δlogit| {diff:.1e} {status}")
    return relative <= tolerance


def check_hf(envrl, case):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    path = case["dir"]
    print(f"hf {path}")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    rows = rows_for(model.config.vocab_size)
    good = compare("transformers vs envrl", envrl_logits(envrl, path, rows),
                   torch_logits(model, rows), LOGIT_TOLERANCE)
    prompt = rows[0][:6]
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False,
                             eos_token_id=None, pad_token_id=0)
    theirs = out[0, len(prompt):].tolist()
    ours = envrl_generate(envrl, path, prompt, 8)
    same = theirs[: len(ours)] == ours
    print(f"  greedy tokens: transformers {theirs}, envrl {ours} {'ok' if same else 'FAIL'}")
    # AutoTokenizer of transformers 5 replaces a `qwen2` model's tokenizer.json by Qwen2's own
    # byte-level BPE (qwen2 is in its MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS), which a word-level
    # tokenizer is not: the tokenizer.json reader loads it as written.
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    for text in TEXTS:
        a, b = envrl_prompt_ids(envrl, path, text), tokenizer.encode(text, add_special_tokens=False)
        if a != b:
            print(f"  tokenizer FAIL on {text!r}: transformers {b}, envrl {a}")
            same = False
    if same:
        print(f"  tokenizer: {len(TEXTS)} texts encode alike")
    return good and same


def check_peft(envrl, case):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base, adapter, merged = case["base"], case["dir"], case["merged"]
    print(f"peft {adapter} on {base}")
    if base.endswith(".gguf"):
        base_path = Path(base)
        model = AutoModelForCausalLM.from_pretrained(str(base_path.parent), gguf_file=base_path.name,
                                                     dtype=torch.float32)
    else:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    model = PeftModel.from_pretrained(model, adapter).eval()
    rows = rows_for(model.config.vocab_size)
    return compare("PEFT (base + adapter) vs envrl (merged export)",
                   envrl_logits(envrl, merged, rows), torch_logits(model, rows),
                   case.get("tolerance", LOGIT_TOLERANCE))


def llama_permute(w, heads):
    """llama.cpp's permutation of q/k rows (convert_hf_to_gguf.py)."""
    return (w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_name(hf):
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in fixed:
        return fixed[hf]
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
             "post_attention_layernorm": "ffn_norm"}
    _, _, layer, rest = hf.split(".", 3)
    for k, v in parts.items():
        if rest.startswith(k):
            return f"blk.{layer}.{v}{rest[len(k):]}"
    raise KeyError(hf)


def check_gguf(envrl, case):
    import gguf
    from safetensors.numpy import load_file

    path, hf_dir = case["file"], Path(case["hf"])
    print(f"gguf {path} against {hf_dir}")
    reader = gguf.GGUFReader(path)
    config = json.loads((hf_dir / "config.json").read_text())
    fields = {name: f.contents() for name, f in reader.fields.items()}
    arch = fields["general.architecture"]
    want = {
        f"{arch}.embedding_length": config["hidden_size"],
        f"{arch}.block_count": config["num_hidden_layers"],
        f"{arch}.feed_forward_length": config["intermediate_size"],
        f"{arch}.attention.head_count": config["num_attention_heads"],
        f"{arch}.attention.head_count_kv": config["num_key_value_heads"],
        f"{arch}.rope.dimension_count": config["head_dim"],
        f"{arch}.context_length": config["max_position_embeddings"],
        f"{arch}.vocab_size": config["vocab_size"],
    }
    good = arch == config["model_type"]
    for key, value in want.items():
        if fields.get(key) != value:
            print(f"  metadata {key} = {fields.get(key)}, config.json says {value} FAIL")
            good = False
    for key, value in {f"{arch}.rope.freq_base": config["rope_theta"],
                       f"{arch}.attention.layer_norm_rms_epsilon": config["rms_norm_eps"]}.items():
        if not np.isclose(fields.get(key, np.nan), value, rtol=1e-6):
            print(f"  metadata {key} = {fields.get(key)}, config.json says {value} FAIL")
            good = False
    tokens = fields["tokenizer.ggml.tokens"]
    types = fields["tokenizer.ggml.token_type"]
    if len(tokens) != config["vocab_size"] or len(types) != len(tokens):
        print(f"  {len(tokens)} tokens, {len(types)} types for a vocabulary of {config['vocab_size']} FAIL")
        good = False
    if fields["tokenizer.ggml.eos_token_id"] != config["eos_token_id"]:
        print("  tokenizer.ggml.eos_token_id differs from config.json FAIL")
        good = False
    print(f"  metadata: {len(fields)} keys read, architecture and tokenizer keys agree with config.json"
          if good else "")

    weights = {}
    for f in sorted(hf_dir.glob("*.safetensors")):
        weights.update(load_file(f))
    by_name = {t.name: t for t in reader.tensors}
    expected = {gguf_name(n) for n in weights}
    if set(by_name) != expected:
        print(f"  tensors: extra {set(by_name) - expected}, missing {expected - set(by_name)} FAIL")
        good = False
    worst = 0.0
    for hf, w in weights.items():
        t = by_name.get(gguf_name(hf))
        if t is None:
            continue
        w = w.astype(np.float32)
        if arch == "llama" and (".q_proj." in hf or ".k_proj." in hf) and w.ndim == 2:
            heads = config["num_attention_heads"] if ".q_proj." in hf else config["num_key_value_heads"]
            w = llama_permute(w, heads)
        shape = tuple(int(d) for d in reversed(t.shape))
        values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape)
        kind = t.tensor_type.name
        scale = float(np.max(np.abs(w))) or 1.0
        allowed = {"F32": 0.0, "F16": 1e-3 * scale, "Q8_0": scale / 127.0}[kind]
        diff = float(np.max(np.abs(values - w)))
        worst = max(worst, diff / scale)
        if shape != w.shape or diff > allowed:
            print(f"  tensor {t.name} ({kind}, {shape}): differs by {diff:.2e} (allowed {allowed:.1e}) FAIL")
            good = False
    print(f"  tensors: {len(by_name)} read, each equal to the Hugging Face weight "
          f"(largest relative difference {worst:.1e})")
    return good


def main():
    envrl, cases = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    checks = {"hf": check_hf, "peft": check_peft, "gguf": check_gguf}
    results = [checks[c["kind"]](envrl, c) for c in cases]
    failed = results.count(False)
    print(f"\n{len(results) - failed} of {len(results)} export checks passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
