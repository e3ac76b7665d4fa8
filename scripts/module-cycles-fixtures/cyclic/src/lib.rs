mod a;
mod b;
mod deep;
mod group;
mod nested;
mod reexport;
mod shop;

pub use shop::stock::Stock;
