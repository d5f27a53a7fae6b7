//! `envrl bench`: speed tables next to the reference implementations' recorded figures.

pub mod alfworld;
pub mod webshop;
pub use alfworld::bench_alfworld;
pub use webshop::bench_webshop;
