//! A crate whose modules import one way: `high` over `folder` over `low`.

pub mod folder;
pub mod high;
pub mod low;

pub use low::Thing;

#[cfg(test)]
mod tests;
