//! Workspace integration tests, one binary built from topic modules.
#![allow(missing_docs)]

// Shared helpers: parameter snapshots.
mod support;

// The causal LM: KV-cache generation against full-sequence scoring, padding, gradients.
mod lm_policy;

// Save → load → continue equals an uninterrupted run; bad checkpoints are clear errors.
mod checkpoint_resume;

// From-scratch tiny LM + GRPO learns the key-and-door world.
mod training_smoke;
