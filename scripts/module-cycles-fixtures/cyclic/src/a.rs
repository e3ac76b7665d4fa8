use crate::b::B;

pub struct A(pub Option<Box<B>>);
