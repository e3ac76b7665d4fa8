//! A jackin home on disk: where everything lives ([`layout`]), the probes
//! of an image's programs kept beside it ([`probes`]), and the file
//! operations every other crate uses to touch what an agent could have
//! written ([`fsutil`]): reads that refuse links, FIFOs and huge files,
//! atomic writes, locks. [`offload`] moves blocking file work off the
//! async runtime. [`fault`] is the tests' fault injection.

pub mod fault;
pub mod fsutil;
pub mod layout;
pub mod offload;
pub mod probes;

pub use layout::Layout;
pub use offload::blocking;
