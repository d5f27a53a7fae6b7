#!/usr/bin/env python3
"""PyTorch side of `scripts/backend-parity.sh`: the loss and gradients `envrl lm grad` computes,
with Hugging Face transformers in float32 on the CPU.

    python3 scripts/torch_grad.py MODEL_DIR IDS_JSON OUT_JSON

IDS_JSON is a JSON list of equal-length token-id lists. OUT_JSON gets
{"loss": f, "grads": {hf_name: [values]}}: the mean next-token cross-entropy over every position
of every row (no padding) and its gradient per parameter, flattened in Hugging Face layout.
Needs torch and transformers.
"""

import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main():
    model_dir, ids_path, out_path = sys.argv[1:4]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="eager"
    )
    model.train()  # no dropout in these architectures; gradients on
    ids = torch.tensor(json.load(open(ids_path)), dtype=torch.long)
    logits = model(input_ids=ids).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    loss = -logp.gather(2, ids[:, 1:].unsqueeze(2)).mean()
    loss.backward()
    grads = {
        name: p.grad.detach().reshape(-1).tolist()
        for name, p in model.named_parameters()
        if p.grad is not None
    }
    with open(out_path, "w") as f:
        json.dump({"loss": loss.item(), "grads": grads}, f)


if __name__ == "__main__":
    main()
