pub struct B(pub crate::a::A);
