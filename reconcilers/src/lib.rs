//! Observing and changing the world: the on-disk layout, durable file
//! operations and the Docker engine adapter.

pub mod engine;
pub mod fsutil;
pub mod layout;

pub use engine::{Engine, EngineError};
pub use layout::Layout;
