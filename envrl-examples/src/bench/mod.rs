//! `envrl bench`: speed tables next to the reference implementations (their recorded figures, or
//! PyTorch run in the same command).

pub mod alfworld;
pub mod bandwidth;
pub mod iteration;
pub mod lm;
pub mod serve;
pub mod sokoban;
pub mod webshop;
pub use alfworld::bench_alfworld;
pub use iteration::bench_iteration;
pub use lm::{GenerateBench, TrainBench, bench_generate, bench_train};
pub use serve::{ServeBench, bench_serve};
pub use sokoban::bench_sokoban;
pub use webshop::bench_webshop;
