pub mod stock;
pub mod till;
