use crate::group::Price;

pub struct Till(pub Vec<Price>);

pub fn total(till: &Till) -> u32 {
    till.0.iter().map(|p| p.0).sum()
}
