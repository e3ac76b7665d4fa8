pub struct Stock;

pub fn count() -> u32 {
    0
}

pub fn order() -> crate::reexport::Order {
    crate::reexport::Order
}
