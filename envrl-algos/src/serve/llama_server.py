"""Serves a GGUF file with llama.cpp's server from the `xllamacpp` wheel (which has no
command-line program), for envrl_algos::serve::SpawnedLlamaCpp and the serve check.

    python llama_server.py MODEL.gguf PORT [--threads N] [--parallel N] [--ctx N]

Plain settings for exact comparison with envrl: F32 KV cache, flash attention off, one
context slot per parallel request. Runs until it is killed.
"""

import argparse
import signal
import sys
import time

import xllamacpp as xlc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("port", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--ctx", type=int, default=4096, help="context per parallel slot")
    args = parser.parse_args()

    params = xlc.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_type_k = xlc.ggml_type.GGML_TYPE_F32
    params.cache_type_v = xlc.ggml_type.GGML_TYPE_F32
    params.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.warmup = False
    server = xlc.Server(params)
    print(f"llama.cpp serving {args.model} on 127.0.0.1:{args.port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            time.sleep(3600)
    finally:
        del server


if __name__ == "__main__":
    main()
