use super::super::low::Thing;

pub struct Deep(pub Thing);

pub(in crate::folder) fn seen_from_the_folder() {}

mod private {
    pub fn thing() -> crate::low::Thing {
        super::super::super::low::Thing
    }
}
