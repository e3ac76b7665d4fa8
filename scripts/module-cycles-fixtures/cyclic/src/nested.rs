pub fn top() {
    self::x::f();
}

mod x {
    pub fn f() {
        super::y::g();
    }
}

mod y {
    pub fn g() {
        self::h();
    }

    fn h() {
        crate::nested::top();
    }
}
