//! Advantage estimators ([`envrl::Advantage`] implementations).

mod gae;
mod gigpo;
mod grpo;
mod rloo;
pub use gae::*;
pub use gigpo::*;
pub use grpo::*;
pub use rloo::*;
