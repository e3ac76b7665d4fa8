pub mod inner;

pub use inner::Deep;
