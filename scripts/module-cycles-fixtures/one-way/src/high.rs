use crate::folder::inner::Deep;
use crate::{
    Thing,
    low::{self, name},
};

pub fn top() -> Thing {
    let _ = (name(), low::quote());
    let _ = Deep(Thing);
    Thing
}
