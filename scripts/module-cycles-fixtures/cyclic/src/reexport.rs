use crate::Stock;

pub struct Order;

pub fn stocked() -> Stock {
    Stock
}
