//! The guide's Rust code blocks (`docs/*.md`, an mdBook), compiled and run as doctests by
//! `cargo test`, so the guide works when copied.

#[doc = include_str!("../docs/traits.md")]
pub mod traits {}

#[doc = include_str!("../docs/custom-environment.md")]
pub mod custom_environment {}

#[doc = include_str!("../docs/backends.md")]
pub mod backends {}

#[doc = include_str!("../docs/pretrained-models.md")]
pub mod pretrained_models {}
