use crate::{
    shop::{
        stock,
        till::{self, Till},
    },
};

pub struct Price(pub u32);

pub fn sell(t: Till) -> u32 {
    till::total(&t) + stock::count()
}
